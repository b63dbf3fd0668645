"""The offline pre-flight of §0–Step 5: its entry points, the audit of many configs, one
module of checks per doc section, and the secret scan."""
