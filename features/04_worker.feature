Feature: Step 3 配置一个 Worker (configure one Worker)
  The worker role names the target cluster, a node selection that hits exactly one node,
  the GPUs the placement needs within the node's capacity, a pinned image, a prepare script
  for what the replaced ENTRYPOINT would have done, non-sensitive environment variables, and
  mounts under which the program reads and writes.

  @check-3.1 @check-3.2 @check-3.3 @check-3.4 @check-3.5 @check-3.6 @check-3.7 @positive
  Scenario: the default Worker is configured as the page says
    Given the default acceptance profile
    When the pre-flight runs
    Then checks 3.1, 3.2, 3.3, 3.4, 3.5, 3.6, 3.7 pass

  @check-3.1 @negative
  Scenario: 选择当前环境为这次任务提供的目标集群
    Given the default acceptance profile
    And the worker role names no cluster
    When the pre-flight runs
    Then check 3.1 fails with "cluster-missing" at the Job YAML

  @check-3.2 @negative
  Scenario: 已选节点数不是 1 时,不要继续
    Given the default acceptance profile
    And the node selection is "rlark.io/pool=gpu-a"
    When the pre-flight runs
    Then check 3.2 fails with "selector-not-one-node" at the Job YAML

  @check-3.2 @negative
  Scenario: a node selection that is not a label map
    Given the default acceptance profile
    And the node selection is "kubernetes.io/hostname=not a valid value!"
    When the pre-flight runs
    Then check 3.2 fails with "selector-value"

  @check-3.3 @negative
  Scenario: 资源编号 0-7 需要 8 张 GPU
    Given the default acceptance profile
    And the component placement is "0-7"
    When the pre-flight runs
    Then check 3.3 fails with "gpus-too-few" at the Job YAML

  @check-3.3 @negative
  Scenario: more GPUs than the selected node can allocate
    Given the default acceptance profile
    And the Worker requests 16 GPUs
    When the pre-flight runs
    Then check 3.3 fails with "gpus-over-capacity" at the Job YAML

  @check-3.3 @negative
  Scenario Outline: a malformed placement "<placement>" is named with its line
    Given the default acceptance profile
    And the component placement is "<placement>"
    When the pre-flight runs
    Then check 3.3 fails with "placement-invalid" at the RLinf config

    Examples:
      | placement |
      | 7-0       |
      | 0-x       |
      | 0-1:0-2   |

  @check-3.4 @negative
  Scenario: 不要使用 latest
    Given the default acceptance profile
    And the Worker's image is "registry.example.com/rlinf:latest"
    When the pre-flight runs
    Then check 3.4 fails with "image-latest" at the Job YAML

  @check-3.5 @negative
  Scenario: RLark 会替换镜像 ENTRYPOINT
    Given the default acceptance profile
    And the prepare script is empty
    When the pre-flight runs
    Then check 3.5 fails with "prepare-missing" at the Job YAML

  @check-3.6 @negative
  Scenario: 按需填写非敏感环境变量
    Given the default acceptance profile
    And the environment variable "WANDB_API_KEY" holds a literal key
    When the pre-flight runs
    Then check 3.6 fails naming "WANDB_API_KEY" at the Job YAML
    And no finding shows the secret

  @check-3.6 @positive @variant
  Scenario: references and ordinary settings are not secrets
    Given the default acceptance profile
    And the environment variable "HF_TOKEN" refers to "${HF_TOKEN}"
    And the environment variable "TOKENIZERS_PARALLELISM" is "false"
    And the environment variable "HF_TOKEN_PATH" is "/var/run/secrets/hf/token"
    When the pre-flight runs
    Then check 3.6 passes

  @check-3.7 @negative
  Scenario: 训练程序必须使用容器内挂载路径
    Given the default acceptance profile
    And RLinf writes its logs to "results"
    When the pre-flight runs
    Then check 3.7 fails with "output-outside-mounts" at the run script

  @check-3.7 @check-4.4 @negative
  Scenario: run_embodiment.sh puts the logs inside the image whatever follows it
    Given the default acceptance profile
    And the run script is "cd /workspace/RLinf && bash examples/embodiment/run_embodiment.sh smoke_ppo_mlp runner.logger.log_path=/mnt/ckpt/logs"
    When the pre-flight runs
    Then check 3.7 fails with "output-outside-mounts"
    And check 4.4 fails with "launcher-drops-arguments"

  @check-3.7 @negative
  Scenario: checkpoints in a read-only mount
    Given the default acceptance profile
    And the "ckpt" mount is read-only
    When the pre-flight runs
    Then check 3.7 fails with "output-read-only"
