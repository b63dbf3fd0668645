"""The acceptance run of one Kubernetes profile as a Job in its own target cluster.

``bundle`` packs the profile and the files it names for a ConfigMap; ``manifests`` writes
the runner's ConfigMap and Job; ``runner`` is the runner Pod's entry point (the suite, then
its record to the object store); ``launch`` is the command's side (submit, stream the
runner's log, fetch the record back, clean up on every path); ``record`` moves a record
directory to and from the object store.
"""
