@modified-job
Feature: 在训练任务中使用存储 (reading the persistent output back)
  The checkpoint must be readable again from its persistent location whatever kind of mount
  holds it: object storage is read back through the S3 API, a host directory through the
  node's filesystem.

  @check-6.5 @check-3.7 @positive @runtime
  Scenario: checkpoints on a hostPath mount are read back from the node
    Given the default acceptance profile
    And RLinf writes its checkpoints to a writable hostPath mount
    When the acceptance run starts
    Then checks 6.1, 6.2, 6.3, 6.4, 6.5 of the run pass
    And the checkpoint was read back from the node's filesystem after the Worker was gone
