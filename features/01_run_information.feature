Feature: 准备 RLinf 运行信息 (prepare the RLinf run information)
  Before the console is opened the team writes down the image with an explicit version,
  the Worker's GPU count, the start command, the container paths of data, model,
  checkpoint and output, and the first business signal with the expected output location.

  @check-P.1 @check-P.2 @check-P.3 @check-P.4 @check-P.5 @positive
  Scenario: the default profile's run information is complete
    Given the default acceptance profile
    When the pre-flight runs
    Then checks P.1, P.2, P.3, P.4, P.5 pass

  @check-P.1 @negative
  Scenario Outline: 镜像地址和明确版本: <image> is not a version
    Given the default acceptance profile
    And the prepared image is "<image>"
    When the pre-flight runs
    Then check P.1 fails with "image-latest" at the profile

    Examples:
      | image                                   |
      | registry.example.com/rlinf:latest       |
      | registry.example.com/rlinf              |

  @check-P.1 @positive @variant
  Scenario: a digest is as good as a version
    Given the default acceptance profile
    And the prepared image is pinned by digest
    When the pre-flight runs
    Then check P.1 passes

  @check-P.2 @negative
  Scenario: 这个 Worker 需要申请的 GPU 数量 is missing
    Given the default acceptance profile
    And the prepared GPU count is "none"
    When the pre-flight runs
    Then check P.2 fails with "gpus-missing"

  @check-P.2 @negative
  Scenario: a GPU count of zero
    Given the default acceptance profile
    And the prepared GPU count is "0"
    When the pre-flight runs
    Then check P.2 fails with "gpus-invalid"

  @check-P.3 @negative
  Scenario: RLinf 启动命令 is missing
    Given the default acceptance profile
    And the prepared start command is empty
    When the pre-flight runs
    Then check P.3 fails with "start-command-missing"

  @check-P.4 @negative
  Scenario: 数据、模型、checkpoint 和训练输出在容器内使用的路径 must be absolute
    Given the default acceptance profile
    And the prepared checkpoint path is "ckpt/logs"
    When the pre-flight runs
    Then check P.4 fails with "path-not-absolute"

  @check-P.5 @negative
  Scenario: 首个业务信号 must be a valid pattern
    Given the default acceptance profile
    And the prepared first signal is "Global Step ("
    When the pre-flight runs
    Then check P.5 fails with "signal-invalid"

  @check-P.5 @negative
  Scenario: 预期输出位置 is missing
    Given the default acceptance profile
    And no output location is prepared
    When the pre-flight runs
    Then check P.5 fails with "output-missing"
