Feature: 版本对比 Release over release (beyond the page)
  A platform release can pass every check of the page and of the training while the Ray
  head takes six times as long to start. So each Step 6 stage of the run (from submission to
  the Pod scheduled, the Ray head, the first signal, the training, the output) is held
  against the profile's budgets and against the median of the profile's last runs in its
  history. A stage over its budget or regressed is a warning of the record, naming the stage,
  its time, the median and the ratio; under the strict policy it fails the run.

  Background:
    Given the default acceptance profile has passed the pre-flight
    And its Job has been submitted to the target

  @check-B.1 @positive @runtime
  Scenario: the stages hold their budgets
    When its stages are compared with their budgets and the profile's earlier runs
    Then the stages hold their budgets and do not regress

  @check-B.1 @negative @variant @runtime
  Scenario: a stage far slower than the profile's earlier runs fails under the strict policy
    Given a history in which every stage of the profile took a tenth of this run's time
    When its stages are compared with that history under the strict policy
    Then B.1 fails naming each stage with its time, the median of the earlier runs and the ratio
