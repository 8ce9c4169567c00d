"""kindgi-eval: evaluates a multi-tenant conversational sales agent on a Dagster asset chain."""

import os

# litellm fetches its price map over the network at import unless told to use the bundled one.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
