Feature: 训练检查 Training checks (beyond the page)
  The page stops at "a first signal appeared and a checkpoint is readable". A platform that
  breaks training passes all of that: a GPU or driver that turns the loss into NaN, a run
  that stalls after its first step or dies halfway, weights that never change. So after
  the page's checks, the run itself is checked: it reaches the steps its config asks for,
  its TensorBoard scalars are finite (and within the profile's bounds), and its checkpoint
  is its own, with finite tensors that training changed. When the Worker fails, the record
  quotes its first error, not the knock-ons that end its log. Opt-in (the profile's
  training.resume, or -m resume): a second submission of the same Job, told by RLinf's
  runner.resume_dir to resume from the run's last checkpoint, goes on at the next step.

  Background:
    Given the default acceptance profile has passed the pre-flight
    And its Job has been submitted to the target

  @check-T.1 @positive @runtime
  Scenario: the run reaches the steps its config asks for
    Then the run reaches the steps its config asks for, without stalling

  @check-T.2 @positive @runtime
  Scenario: the run's metrics are real
    Then its TensorBoard scalars are there, every value finite and within the profile's bounds

  @check-T.3 @positive @runtime
  Scenario: the checkpoint is this run's and holds a trained model
    Then its checkpoint is its own, with finite tensors that training changed

  @check-T.4 @resume @positive @runtime
  Scenario: a second submission resumes from the run's last checkpoint
    Then a second submission with runner.resume_dir starts at the step after the run's last checkpoint and reaches its target
