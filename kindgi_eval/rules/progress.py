"""How a paying stage reports how far it has got. Pure: no I/O."""

from collections.abc import Callable

Progress = Callable[[str, int, int], None]
"""Called as `progress(counted, done, total)`: what is being counted (`cases answered`, `calibration samples drawn`,
`prompts judged`, …), how many are done and how many there are."""
