Feature: Step 1 保留原有 RLinf 配置 (keep the validated RLinf config)
  The config RLinf actually loads uses cluster.num_nodes: 1 and keeps the validated
  component_placement, world sizes, offload, pipeline_stage_num, and the algorithm, model,
  data and checkpoint settings.

  @check-1.1 @check-1.2 @positive
  Scenario: 本次实际加载的 RLinf 配置 is the validated one
    Given the default acceptance profile
    When the pre-flight runs
    Then checks 1.1, 1.2 pass

  @check-1.1 @negative
  Scenario: the run command loads another config
    Given the default acceptance profile
    And the run command loads the config "smoke_ppo_mlp_big"
    When the pre-flight runs
    Then check 1.1 fails with "config-name-differs" at the run script

  @check-1.1 @negative
  Scenario: an override RLinf would refuse
    Given the default acceptance profile
    And the run command adds the override "runner.no_such_key=3"
    When the pre-flight runs
    Then check 1.1 fails with "config-unloadable" at the run script

  @check-1.2 @positive @variant
  Scenario: 沿用该工作负载已经验证的设置
    Given the default acceptance profile
    And the run command adds the override "runner.max_steps=3"
    When the pre-flight runs
    Then check 1.2 passes

  @check-1.2 @negative
  Scenario Outline: the run command changes <setting>
    Given the default acceptance profile
    And the run command adds the override "<override>"
    When the pre-flight runs
    Then check 1.2 fails with "validated-setting-overridden" at the run script

    Examples:
      | setting              | override                                          |
      | the model            | actor.model.hidden_dim=64        |
      | the algorithm        | algorithm.gamma=0.5              |
      | offload              | actor.enable_offload=true        |
      | pipeline_stage_num   | rollout.pipeline_stage_num=2     |

  @check-1.2 @check-3.7 @positive @variant
  Scenario: moving the model path onto a mount keeps the validated settings
    Given the default acceptance profile
    And the run command adds the override "actor.model.model_path=/mnt/models/mlp"
    When the pre-flight runs
    Then checks 1.2, 3.7 pass
