Feature: 确认任务适合单节点运行 (§0: is the job right for one node)
  The page applies when RLinf's effective cluster.num_nodes is 1, one compute node provides
  the GPUs, data and storage, and every component shares one image, mounts and environment.
  Several Workers, node groups or extra resource fields go to 规划多节点和异构 Worker;
  real-robot jobs wait for device and on-site safety confirmation.

  @check-0.1 @positive
  Scenario: 最终生效的 cluster.num_nodes 为 1
    Given the default acceptance profile
    When the pre-flight runs
    Then check 0.1 passes

  @check-0.1 @check-0.4 @negative
  Scenario: the run command raises cluster.num_nodes to 2
    Given the default acceptance profile
    And the run command adds the override "cluster.num_nodes=2"
    When the pre-flight runs
    Then check 0.1 fails with "num-nodes-not-1" at the run script
    And the verdict is "redirect" naming "num_nodes=2"

  @check-0.1 @negative
  Scenario: the RLinf YAML itself asks for two nodes
    Given the default acceptance profile
    And an RLinf config with num_nodes 2
    When the pre-flight runs
    Then check 0.1 fails with "num-nodes-not-1" at the RLinf config

  @check-0.1 @negative
  Scenario: num_nodes is not a number
    Given the default acceptance profile
    And an RLinf config with num_nodes "many"
    When the pre-flight runs
    Then check 0.1 fails with "num-nodes-invalid" at the RLinf config

  @check-0.2 @positive
  Scenario: GPU、数据和存储都能由同一台计算节点提供
    Given the default acceptance profile
    When the pre-flight runs
    Then check 0.2 passes

  @check-0.2 @negative
  Scenario: an object-storage mount without a bucket
    Given the default acceptance profile
    And the "ckpt" mount names no bucket
    When the pre-flight runs
    Then check 0.2 fails with "mount-incomplete"

  @check-0.3 @positive
  Scenario: 所有组件可以使用同一份镜像、挂载和启动环境
    Given the default acceptance profile
    When the pre-flight runs
    Then check 0.3 passes

  @check-0.3 @check-0.4 @negative
  Scenario: a second role with another image
    Given the default acceptance profile
    And the job has a second role "rollout" with image "registry.example.com/rlinf-rollout:v0.3.0"
    When the pre-flight runs
    Then check 0.3 fails with "several-roles"
    And the verdict is "redirect" naming "images=2"

  @check-0.4 @positive
  Scenario: a single-node job is not redirected
    Given the default acceptance profile
    When the pre-flight runs
    Then check 0.4 passes
    And the verdict is not "redirect"

  @check-0.4 @negative
  Scenario: CPU, memory and /dev/shm fields send the job to the multi-node guide
    Given the default acceptance profile
    And the worker role declares the resources "cpu, memory, shm"
    When the pre-flight runs
    Then the verdict is "redirect" naming "resources.cpu, resources.memory, resources.shm"

  @check-0.5 @positive
  Scenario: a simulation job is not a real-robot job
    Given the default acceptance profile
    When the pre-flight runs
    Then check 0.5 passes

  @check-0.5 @negative
  Scenario: 真机任务需要先完成设备和安全确认
    Given the default acceptance profile
    And the RLinf config declares a node group with Franka hardware
    When the pre-flight runs
    Then check 0.5 fails with "real-robot-unconfirmed"

  @check-0.5 @positive @variant
  Scenario: a real-robot job whose safety the profile confirms
    Given the default acceptance profile
    And the RLinf config declares a node group with Franka hardware
    And the profile confirms on-site safety
    When the pre-flight runs
    Then check 0.5 passes

  @check-0.1 @check-0.4 @check-0.5 @check-3.3 @positive @variant
  Scenario Outline: 真实 RLinf 配置: <config> suits one node
    Given the RLinf example config "<config>"
    When the pre-flight classifies it
    Then its effective num_nodes is 1
    And it is classified as a single-node job needing <gpus> GPUs

    Examples:
      | config                                  | gpus |
      | maniskill_ppo_openvlaoft                | 8    |
      | frankasim_ppo_mlp                       | 1    |
      | libero_spatial_0_grpo_mlp               | 2    |
      | libero_goal_async_ppo_gr00t             | 4    |
      | libero_spatial_ppo_openpi               | all  |
      | robotwin_place_empty_cup_grpo_openvlaoft | 8   |
      | qwen2.5-1.5b-single-gpu                 | 1    |
      | qwen2.5-1.5b-grpo-fsdp                  | all  |

  @check-0.1 @check-0.4 @negative
  Scenario Outline: 真实 RLinf 配置: <config> goes to the multi-node guide
    Given the RLinf example config "<config>"
    When the pre-flight classifies it
    Then its effective num_nodes is <nodes>
    And it is redirected naming "<reasons>"

    Examples:
      | config                              | nodes | reasons                   |
      | qwen2.5-1.5b-grpo-megatron          | 16    | num_nodes=16              |
      | qwen2.5-1.5b-grpo-fsdp-pipeline     | 8     | num_nodes=8               |
      | realworld_sac_flow_image            | 2     | num_nodes=2, node_groups=2 |

  @check-0.5 @negative
  Scenario Outline: 真实 RLinf 配置: <config> drives real robots
    Given the RLinf example config "<config>"
    When the pre-flight classifies it
    Then it is a real-robot job blocked until safety is confirmed

    Examples:
      | config                          |
      | realworld_collect_dexhand_data  |
      | realworld_eval_dual_franka      |
