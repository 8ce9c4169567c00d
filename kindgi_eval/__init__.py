"""kindgi-eval: evaluates a multi-tenant conversational sales agent on a Dagster asset chain."""

import os

# litellm fetches its price map over the network at import unless told to use the bundled one.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# pyarrow's default pool (jemalloc or mimalloc) keeps what a run freed for reuse, so a process that has written its
# tables stays at its high-water mark; the system allocator hands it back. A pool the user chose is kept.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
