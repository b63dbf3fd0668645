"""``rlark-acceptance init``: a profile for a new site from what the site already has."""
