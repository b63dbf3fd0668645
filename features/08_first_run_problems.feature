@fault-injection
Feature: 首次运行问题排查 (first-run troubleshooting starts at the earliest failing check)
  When a step of the page does not show its result, the harness must go red at that step,
  at once, naming the cause and the doc's remedy, and must not run into a timeout.
  Each scenario submits a deliberately broken Job to the target and expects the verdict.

  @check-6.1 @check-2.1 @negative @runtime
  Scenario: a task name the platform refuses never reaches the task list
    Given the default acceptance profile
    And the task is named "RLinf_Smoke"
    When the Job is submitted despite the pre-flight
    Then check 6.1 is the earliest failure naming "RLinf_Smoke"
    And the pre-flight had failed check 2.1

  @check-6.4 @negative @runtime
  Scenario: the first signal never appears
    Given the default acceptance profile
    And the run command adds the override "runner.max_steps=0"
    When the Job is submitted despite the pre-flight
    Then check 6.4 is the earliest failure
    And the verdict did not wait for the firstSignal timeout

  @check-6.5 @check-3.7 @negative @runtime
  Scenario: checkpoints written outside every mount are gone with the Worker
    Given the default acceptance profile
    And RLinf writes its logs to "results"
    When the Job is submitted despite the pre-flight
    Then check 6.5 is the earliest failure
    And the pre-flight had failed check 3.7
    And the verdict did not wait for the output timeout

  @check-6.3 @negative @runtime
  Scenario: the prepare script fails
    Given the default acceptance profile
    And the prepare script ends with "exit 3"
    When the Job is submitted despite the pre-flight
    Then check 6.3 is the earliest failure naming "exit code 3"
    And the verdict did not wait for the rayHead timeout

  @check-6.3 @negative @runtime
  Scenario: the Worker dies before Ray starts
    Given the default acceptance profile
    And the prepare script ends with "kill -KILL $$"
    When the Job is submitted despite the pre-flight
    Then check 6.3 is the earliest failure naming "exit code 137"
    And the verdict did not wait for the rayHead timeout

  @check-6.2 @negative @runtime
  Scenario: a node selection no node matches leaves the Pod unschedulable
    Given the default acceptance profile
    And the node selection is "rlark.io/pool=gpu-a"
    When the Job is submitted despite the pre-flight
    Then check 6.2 is the earliest failure naming "Unschedulable"
    And the verdict did not wait for the scheduled timeout

  @check-3.4 @check-P.1 @negative
  Scenario: an unpinned image is stopped at the pre-flight
    Given the default acceptance profile
    And the Worker's image is "registry.example.com/rlinf:latest"
    When the acceptance run starts
    Then it stops at the pre-flight naming check 3.4
    And nothing was submitted to the target
