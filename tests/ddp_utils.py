"""Run a test worker in several CPU processes joined in one gloo process group."""

from __future__ import annotations

import socket
from typing import Any, Callable

import torch.distributed as dist
import torch.multiprocessing as mp


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _in_group(rank: int, worker: Callable, port: int, world: int, args: tuple) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        worker(rank, *args)
    finally:
        dist.destroy_process_group()


def spawn_gloo(worker: Callable[..., None], *args: Any, world: int = 2) -> None:
    """Call ``worker(rank, *args)`` in ``world`` spawned processes inside a gloo group; waits for all.

    Args:
        worker: a module-level (picklable) function; the group is set up before it runs and torn down after.
        *args: passed after the rank.
        world: number of processes.
    """
    mp.spawn(_in_group, args=(worker, free_port(), world, args), nprocs=world, join=True)
