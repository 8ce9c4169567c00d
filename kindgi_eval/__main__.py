"""`python -m kindgi_eval` is `kindgi-eval`."""

from kindgi_eval.cli import main

main()
