"""Helpers shared by the tests and the benchmarks (tiny offline models); never imported by the library."""
