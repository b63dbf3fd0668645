Feature: Step 6 确认任务开始运行 (confirm the job starts running)
  After submission, in this order: the Job is in the task list, one actual Pod for the one
  Worker runs on the expected Node, the logs show the Ray head started and the run script
  began, RLinf shows the predetermined progress, and the checkpoint is written to the
  persistent location and can be read again. Troubleshooting starts at the earliest step
  that did not show its result.

  Background:
    Given the default acceptance profile has passed the pre-flight
    And its Job has been submitted to the target

  @check-6.1 @positive @runtime
  Scenario: 任务列表中出现本次 Job
    Then the Job appears in the task list

  @check-6.2 @positive @runtime
  Scenario: Job 详情中出现一个 Worker 对应的实际 Pod,并位于预期 Node
    Then exactly one Pod runs the Worker on the expected node

  @check-6.3 @positive @runtime
  Scenario: 日志显示 Ray Head 已启动,并开始执行运行脚本
    Then the logs show the Ray head started and then the run script's first output

  @check-1.1 @check-1.2 @positive @runtime
  Scenario: the config RLinf printed at start-up is the validated one
    Then the config RLinf printed at start-up has cluster.num_nodes 1
    And its placement, world sizes, offload, pipeline stages, algorithm, model, data and checkpoint settings equal the validated ones

  @check-6.4 @positive @runtime
  Scenario: RLinf 日志出现预先确定的训练进展
    Then the RLinf logs show the first signal

  @check-6.5 @positive @runtime
  Scenario: checkpoint 写入预期的持久化位置,并且可以重新读取
    Then a checkpoint is readable at the expected location
    And it is still readable after the Worker is gone
