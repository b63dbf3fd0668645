Feature: Step 5 核对 YAML 并提交 (review the YAML and submit)
  The YAML preview shows 1 RLark role named worker, 1 Worker, 1 Ray node equal to
  cluster.num_nodes, Header worker with 1 replica, GPUs consistent with the RLinf config
  and the node, the prepared image, commands and mounts, a node selection that hits only
  the expected node, and no passwords, private keys, tokens or storage keys.

  @check-5.1 @check-5.2 @check-5.3 @check-5.4 @check-5.5 @check-5.6 @check-5.7 @check-5.8 @positive
  Scenario: the default YAML preview matches the table
    Given the default acceptance profile
    When the pre-flight runs
    Then checks 5.1, 5.2, 5.3, 5.4, 5.5, 5.6, 5.7, 5.8 pass

  @check-5.1 @negative
  Scenario: RLark 角色数 1,名称为 worker
    Given the default acceptance profile
    And the role is named "head"
    When the pre-flight runs
    Then check 5.1 fails with "preview-roles"

  @check-5.2 @check-5.3 @check-5.4 @negative
  Scenario: Worker 数 1
    Given the default acceptance profile
    And the worker role has 2 replicas
    When the pre-flight runs
    Then check 5.2 fails with "preview-workers" at the Job YAML
    And check 5.3 fails with "preview-ray-nodes"
    And check 5.4 fails with "preview-header"

  @check-5.3 @negative
  Scenario: Ray 节点数与 cluster.num_nodes 一致
    Given the default acceptance profile
    And an RLinf config with num_nodes 2
    When the pre-flight runs
    Then check 5.3 fails with "preview-ray-nodes"

  @check-5.4 @negative
  Scenario: Header 是 worker
    Given the default acceptance profile
    And the worker role is not the Header
    When the pre-flight runs
    Then check 5.4 fails with "preview-header"

  @check-5.5 @negative
  Scenario: GPU 与 RLinf 配置和目标节点容量一致
    Given the default acceptance profile
    And the Worker requests a GPU count other than the prepared one
    When the pre-flight runs
    Then check 5.5 fails with "gpus-differ-from-prepared" at the Job YAML

  @check-5.6 @negative
  Scenario: 镜像、命令和挂载与本次准备的值一致
    Given the default acceptance profile
    And the Worker's image is "rlark-acceptance/smoke:0.2.0"
    And the "data" mount is removed
    When the pre-flight runs
    Then check 5.6 fails with "image-differs" at the Job YAML
    And check 5.6 fails with "mount-missing"

  @check-5.7 @negative
  Scenario: 确认节点选择只命中预期 Node
    Given the default acceptance profile
    And the node selection is "kubernetes.io/hostname=gpu-node-07"
    When the pre-flight runs
    Then check 5.7 fails with "selector-other-node" at the Job YAML

  @check-5.8 @negative
  Scenario Outline: 保护敏感信息: <what> in the <where>
    Given the default acceptance profile
    And the <where> holds <what>
    When the pre-flight runs
    Then check 5.8 fails at the Job YAML
    And no finding shows the secret

    Examples:
      | what                     | where          |
      | a private key            | prepare script |
      | an object-storage key    | run script     |
      | a password in a URL      | run script     |
      | an access token          | environment    |
