"""The input model: YAML sources with key paths and lines, findings, the page's checks, the
acceptance profile, the RLark Job YAML and the node inventory. Imports nothing above it."""
