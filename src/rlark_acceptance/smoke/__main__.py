"""``python -m rlark_acceptance.smoke``: see ``train.main``."""

from .train import main

if __name__ == "__main__":
    main()
