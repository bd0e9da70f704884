"""``ner_zoo.cli.main.main([...])`` called from Python (a notebook, a script, a test) leaves no Lightning
stand-ins behind (there are none since issue 42): a later ``import lightning`` in that process gets the real package."""

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import sys, tempfile
    from ner_zoo.cli.main import main
    with tempfile.TemporaryDirectory() as d:
        main(["compare", d])
    import lightning
    assert not getattr(lightning, "__ner_zoo_stand_in__", False), "stand-in Lightning left in sys.modules"
    from lightning.pytorch import Trainer
    print("real", Trainer.__module__)
""")


@pytest.mark.process
def test_commands_called_from_python_leave_the_real_lightning_importable():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines()[-1].startswith("real lightning.pytorch"), out.stdout[-2000:]
