@fault-injection
Feature: 训练检查 Training checks go red at the right check (beyond the page)
  Each scenario submits a Job whose training is deliberately broken, the way a platform
  release breaks it (a stall, a divergence to NaN, no scalars, weights that never change, an
  actor that fails while the others are torn down, a runner that ignores runner.resume_dir),
  and expects the training check that names it, with the run's first error quoted where the
  Worker failed. The smoke workload breaks on demand; a profile that runs another workload
  (real RLinf) has these self-checks not applicable, and its own run held to the checks.

  @check-T.1 @negative @runtime
  Scenario: a run that stalls after its second step is not accepted
    Given the default acceptance profile
    And the profile runs the smoke workload, whose training breaks on demand
    And the run command adds the override "smoke.stall_after_step=2"
    And the run command adds the override "smoke.stall_seconds=60"
    And the profile's progress timeout is 10 s
    When the Job is submitted despite the pre-flight
    Then check T.1 is the earliest failure naming "stalled at step 2 of 5"
    And the verdict did not wait for the training timeout

  @check-T.1 @negative @runtime
  Scenario: an actor that fails mid-run is named as the first cause, not its knock-ons
    Given the default acceptance profile
    And the profile runs the smoke workload, whose training breaks on demand
    And the run command adds the override "smoke.crash_at_step=3"
    And the run command adds the override "smoke.kill_actors_on_failure=true"
    When the Job is submitted despite the pre-flight
    Then check T.1 is the earliest failure naming "the Worker ended at step 2 of 5"
    And the failure quotes the run's first error "smoke.crash_at_step=3: deliberate failure", not "ActorDiedError"

  @check-T.2 @check-T.3 @negative @runtime
  Scenario: a run whose training diverges to NaN is not accepted
    Given the default acceptance profile
    And the profile runs the smoke workload, whose training breaks on demand
    And the run command adds the override "smoke.nan_from_step=3"
    When the Job is submitted despite the pre-flight
    Then check T.2 is the earliest failure naming "are not finite"
    And check T.3 failed too, naming "NaN or infinite values"

  @check-T.2 @negative @runtime
  Scenario: a run that logs no scalars is not accepted
    Given the default acceptance profile
    And the run command adds the override "runner.logger.logger_backends=[]"
    When the Job is submitted despite the pre-flight
    Then check T.2 is the earliest failure naming "RLinf writes no TensorBoard events"

  @check-T.3 @negative @runtime
  Scenario: a run whose weights never change is not accepted
    Given the default acceptance profile
    And the profile runs the smoke workload, whose training breaks on demand
    And the run command adds the override "actor.optim.lr=0"
    When the Job is submitted despite the pre-flight
    Then check T.3 is the earliest failure naming "identical weights"

  @check-T.4 @resume @negative @runtime
  Scenario: a second submission that ignores runner.resume_dir is not accepted
    Given the default acceptance profile
    And the profile runs the smoke workload, whose training breaks on demand
    And the profile turns the resume check on
    And the run command adds the override "smoke.ignore_resume=true"
    When the Job is submitted despite the pre-flight
    Then check T.4 is the earliest failure naming "the resumed run started at step 1, not 6: runner.resume_dir was not honoured"

  @check-T.4 @resume @negative @runtime
  Scenario: a second submission that goes on at the next step without the checkpoint's weights is not accepted
    Given the default acceptance profile
    And the profile runs the smoke workload, whose training breaks on demand
    And the profile turns the resume check on
    And the run command adds the override "smoke.skip_resume_weights=true"
    When the Job is submitted despite the pre-flight
    Then check T.4 is the earliest failure naming "are not global_step_5's (sha256"
