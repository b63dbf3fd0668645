Feature: Step 2 添加 worker 角色 (add the worker role)
  A recognisable task name, task type 自定义任务, exactly one role renamed worker, and that
  row shown as Header.

  @check-2.1 @check-2.2 @check-2.3 @check-2.4 @positive
  Scenario: the default Job has one Header role named worker
    Given the default acceptance profile
    When the pre-flight runs
    Then checks 2.1, 2.2, 2.3, 2.4 pass

  @check-2.1 @negative
  Scenario Outline: 填写便于识别的任务名称: "<name>" breaks the name format
    Given the default acceptance profile
    And the task is named "<name>"
    When the pre-flight runs
    Then check 2.1 fails with "name-format" at the Job YAML

    Examples:
      | name              |
      | RLinf_ManiSkill   |
      | -leading-dash     |

  @check-2.2 @negative
  Scenario: 在任务类型中选择自定义任务
    Given the default acceptance profile
    And the task type is "pytorch"
    When the pre-flight runs
    Then check 2.2 fails with "task-type" at the Job YAML

  @check-2.3 @negative
  Scenario: 把角色名称改为 worker
    Given the default acceptance profile
    And the role is named "actor"
    When the pre-flight runs
    Then check 2.3 fails with "role-name" at the Job YAML

  @check-2.3 @negative
  Scenario: RLinf components are not RLark roles
    Given the default acceptance profile
    And the job has a second role "rollout" with image "rlark-acceptance/smoke:0.1.0"
    When the pre-flight runs
    Then check 2.3 fails with "role-count"

  @check-2.4 @negative
  Scenario: 确认它显示为 Header
    Given the default acceptance profile
    And the worker role is not the Header
    When the pre-flight runs
    Then check 2.4 fails with "worker-not-header" at the Job YAML
