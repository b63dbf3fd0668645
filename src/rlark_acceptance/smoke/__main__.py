"""``python -m rlark_acceptance.smoke``: see ``train.main``."""

from rlark_acceptance.smoke.train import main

if __name__ == "__main__":
    main()
