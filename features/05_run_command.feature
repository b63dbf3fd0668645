Feature: Step 4 填写运行命令 (the run command)
  worker is the Header role, a single-cluster job uses no cross-cluster network, an SSH key
  only when remote access is needed, the run script is the validated start command with an
  explicit cd, and TensorBoard points at where RLinf writes its event files.

  @check-4.1 @check-4.2 @check-4.3 @check-4.4 @check-4.5 @positive
  Scenario: the default run command is the validated one
    Given the default acceptance profile
    When the pre-flight runs
    Then checks 4.1, 4.2, 4.3, 4.4, 4.5 pass

  @check-4.1 @negative
  Scenario: 在选择 Head 节点中确认 worker 是 Header 角色
    Given the default acceptance profile
    And the head role is "master"
    When the pre-flight runs
    Then check 4.1 fails with "head-role" at the Job YAML

  @check-4.2 @negative
  Scenario: 单集群任务保持默认的不使用跨集群网络
    Given the default acceptance profile
    And the job uses the cross-cluster network "dc-east"
    When the pre-flight runs
    Then check 4.2 fails with "cross-cluster-network" at the Job YAML

  @check-4.3 @negative
  Scenario: 只有确实需要远程访问时才选择 SSH 公钥
    Given the default acceptance profile
    And an SSH public key is chosen
    When the pre-flight runs
    Then check 4.3 warns with "ssh-key-set"
    And the verdict is "pass"

  @check-4.4 @negative
  Scenario: 在运行脚本中填写已经验证的 RLinf 启动命令
    Given the default acceptance profile
    And the run script is "cd /workspace/smoke && python -m rlark_acceptance.smoke --config-name smoke_ppo_mlp runner.logger.log_path=/mnt/ckpt/logs runner.max_steps=3"
    When the pre-flight runs
    Then check 4.4 fails with "run-script-differs" at the Job YAML

  @check-4.4 @negative
  Scenario: 命令依赖工作目录时,请明确执行 cd
    Given the default acceptance profile
    And the run script and the start command are "bash examples/embodiment/run_embodiment.sh smoke_ppo_mlp"
    When the pre-flight runs
    Then check 4.4 fails with "relative-without-cd"

  @check-4.5 @negative
  Scenario: 填写训练程序写入 event 文件的容器路径
    Given the default acceptance profile
    And the TensorBoard path is "/mnt/ckpt/tb"
    When the pre-flight runs
    Then check 4.5 fails with "tensorboard-elsewhere" at the Job YAML

  @check-4.5 @positive @variant
  Scenario: a parent of the event directory also shows the events
    Given the default acceptance profile
    And the TensorBoard path is "/mnt/ckpt/logs"
    When the pre-flight runs
    Then check 4.5 passes
