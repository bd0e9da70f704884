"""The checkpoint format: what a zoo checkpoint carries beside Lightning's entries (``entries``), the digest of
its weights (``integrity``) and the one table of renamed keys (``migrations``). Plain torch; below ``training``."""
