"""GRPO / DAPO / CISPO token losses (fgrpo_sim.core.policy_loss)."""

import math

import pytest
import torch

from fgrpo_sim.core import grpo_advantages, policy_loss

F64 = torch.float64


def _tiny(ratios, logp_values, mask):
    logp = torch.tensor(logp_values, dtype=F64, requires_grad=True)
    old = logp.detach() - torch.log(torch.tensor(ratios, dtype=F64))
    return logp, old, torch.tensor(mask)


# ratios r: seq 0 (A = +1) has 1.1 and 1.25; seq 1 (A = -1) has 0.7 and a masked token.
RATIOS = [[1.1, 1.25], [0.7, 1.5]]
LOGP = [[-1.0, -2.0], [-0.5, -3.0]]
MASK = [[1, 1], [1, 0]]
ADV = torch.tensor([1.0, -1.0], dtype=F64)


def test_grpo_hand_value():
    logp, old, mask = _tiny(RATIOS, LOGP, MASK)
    # min(1.1, 1.1) + min(1.25, 1.2) + min(-0.7, -0.8) = 1.1 + 1.2 - 0.8 = 1.5 over 3 tokens
    loss, stats = policy_loss(logp, old, ADV, mask, method="grpo")
    assert loss.item() == pytest.approx(-1.5 / 3, abs=1e-12)
    assert stats["clip_fraction_high"].item() == pytest.approx(1 / 3)
    assert stats["clip_fraction_low"].item() == pytest.approx(1 / 3)
    assert stats["clip_fraction"].item() == pytest.approx(2 / 3)
    assert stats["ratio_mean"].item() == pytest.approx((1.1 + 1.25 + 0.7) / 3)
    assert stats["ratio_max"].item() == pytest.approx(1.25) and stats["ratio_min"].item() == pytest.approx(0.7)
    assert stats["num_tokens"].item() == 3
    # sequence mean: seq 0 -> (1.1 + 1.2) / 2 = 1.15, seq 1 -> -0.8; mean 0.175
    loss_seq, _ = policy_loss(logp, old, ADV, mask, method="grpo", aggregation="sequence_mean")
    assert loss_seq.item() == pytest.approx(-0.175, abs=1e-12)


def test_dapo_hand_value():
    logp, old, mask = _tiny(RATIOS, LOGP, MASK)
    # clip-higher 0.28: r = 1.25 is no longer clipped -> 1.1 + 1.25 - 0.8
    loss, stats = policy_loss(logp, old, ADV, mask, method="dapo")
    assert loss.item() == pytest.approx(-(1.1 + 1.25 - 0.8) / 3, abs=1e-12)
    assert stats["clip_fraction_high"].item() == 0.0
    assert stats["clip_fraction_low"].item() == pytest.approx(1 / 3)


def test_cispo_hand_value_and_cap():
    logp, old, mask = _tiny(RATIOS, LOGP, MASK)
    # weights equal r (inside [0, 6]): 1.1 * 1 * -1 + 1.25 * 1 * -2 + 0.7 * -1 * -0.5 = -3.25
    loss, stats = policy_loss(logp, old, ADV, mask, method="cispo")
    assert loss.item() == pytest.approx(3.25 / 3, abs=1e-12)
    assert stats["clip_fraction"].item() == 0.0
    # r = 7.5 is capped at 1 + eps_high = 6 (two-sided and upper alike); r = 0.5 is clipped up to
    # 0.9 only by the two-sided rule with eps_low = 0.1.
    logp, old, mask = _tiny([[7.5, 0.5]], [[-1.0, -2.0]], [[1, 1]])
    adv = torch.tensor([2.0], dtype=F64)
    loss, stats = policy_loss(logp, old, adv, mask, method="cispo")
    assert loss.item() == pytest.approx(-(6 * 2 * -1.0 + 0.5 * 2 * -2.0) / 2)
    assert stats["clip_fraction_high"].item() == 0.5 and stats["clip_fraction_low"].item() == 0.0
    loss, stats = policy_loss(logp, old, adv, mask, method="cispo", eps_low=0.1)
    assert loss.item() == pytest.approx(-(6 * 2 * -1.0 + 0.9 * 2 * -2.0) / 2)
    assert stats["clip_fraction_low"].item() == 0.5
    loss, stats = policy_loss(logp, old, adv, mask, method="cispo", eps_low=0.1, cispo_clip="upper")
    assert loss.item() == pytest.approx(-(6 * 2 * -1.0 + 0.5 * 2 * -2.0) / 2)
    assert stats["clip_fraction_low"].item() == 0.0


def test_cispo_gradient_only_through_logp():
    torch.manual_seed(0)
    logp = (torch.randn(3, 5, dtype=F64) - 2).requires_grad_()
    old = (logp.detach() + 1.5 * torch.randn(3, 5, dtype=F64)).requires_grad_()  # ratios from ~0.05 to ~20
    adv = torch.tensor([1.0, -0.5, 2.0], dtype=F64)
    mask = torch.ones(3, 5)
    loss, _ = policy_loss(logp, old, adv, mask, method="cispo")
    loss.backward()
    weight = torch.exp(logp.detach() - old.detach()).clamp(0.0, 6.0)
    # d loss / d logp = -sg(w) A / T: no term from differentiating the weight, and none to old_logp.
    assert torch.allclose(logp.grad, -weight * adv[:, None] / 15)
    assert old.grad is None
    assert (weight == 6.0).any()  # capped tokens keep their (capped) gradient, unlike PPO clipping
    assert (logp.grad != 0).all()


def test_dapo_differs_from_grpo_exactly_where_it_should():
    torch.manual_seed(1)
    logp = torch.randn(64, 16, dtype=F64, requires_grad=True)
    old = logp.detach() - 0.25 * torch.randn(64, 16, dtype=F64)
    adv = torch.randn(64, 16, dtype=F64)
    mask = torch.ones(64, 16, dtype=torch.bool)
    grads = {}
    for method in ("grpo", "dapo"):
        logp.grad = None
        policy_loss(logp, old, adv, mask, method=method)[0].backward()
        grads[method] = logp.grad.clone()
    r = torch.exp(logp.detach() - old)
    expected = (adv > 0) & (r > 1.2) & (r <= 1.28)
    assert expected.sum() > 10  # the test exercises the band
    assert torch.equal(grads["grpo"] != grads["dapo"], expected)
    assert torch.all(grads["grpo"][expected] == 0)  # GRPO drops these tokens, DAPO keeps them


@pytest.mark.parametrize("method", ["grpo", "dapo", "cispo"])
@pytest.mark.parametrize("aggregation", ["token_mean", "sequence_mean"])
def test_gradcheck_float64(method, aggregation):
    torch.manual_seed(2)
    logp = (torch.randn(3, 4, dtype=F64) - 1).requires_grad_()
    old = logp.detach() - 0.3 * torch.randn(3, 4, dtype=F64)
    adv = torch.tensor([[1.0], [-2.0], [0.5]], dtype=F64).expand(3, 4).clone()
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    if method == "cispo":
        # CISPO's weight is stop-gradient by design, so the analytic gradient deliberately ignores how
        # the weight moves with logp. Check it along the direction that keeps the ratio fixed (old_logp
        # moves with logp), where the numeric derivative sees only the log-prob term.
        log_ratio = logp.detach() - old

        def fn(lp):
            return policy_loss(lp, lp.detach() - log_ratio, adv, mask, method=method, aggregation=aggregation)[0]
    else:

        def fn(lp):
            return policy_loss(lp, old, adv, mask, method=method, aggregation=aggregation)[0]

    assert torch.autograd.gradcheck(fn, (logp,))


@pytest.mark.parametrize("method", ["grpo", "dapo", "cispo"])
def test_tabular_softmax_gradient_identity(method):
    # Single-step tabular softmax policy, ratio 1: grad_z of the surrogate = (1/N) sum_i A_i (e_{a_i} - p).
    torch.manual_seed(3)
    vocab, n = 6, 8
    logits = torch.randn(vocab, dtype=F64, requires_grad=True)
    p = torch.softmax(logits, 0)
    actions = torch.multinomial(p.detach(), n, replacement=True)
    rewards = (actions % 2 == 0).to(F64)[None, :]
    if rewards.min() == rewards.max():
        rewards[0, 0] = 1 - rewards[0, 0]
    adv = grpo_advantages(rewards, eps=0.0)[0]
    logp = torch.log_softmax(logits, 0)[actions][:, None]  # [batch = N, T = 1]
    loss, _ = policy_loss(logp, logp.detach(), adv, torch.ones(n, 1), method=method)
    (grad_surrogate,) = torch.autograd.grad(-loss, logits)
    onehot = torch.nn.functional.one_hot(actions, vocab).to(F64)
    expected = (adv[:, None] * (onehot - p.detach())).mean(0)
    assert torch.allclose(grad_surrogate, expected, atol=1e-12)


def test_masked_positions_never_poison_gradients():
    logp = torch.tensor([[-1.0, float("-inf")], [-0.5, float("nan")]], requires_grad=True)
    old = torch.tensor([[-1.1, 0.0], [-0.4, float("-inf")]])
    mask = torch.tensor([[1, 0], [1, 0]])
    for method in ("grpo", "dapo", "cispo"):
        logp.grad = None
        loss, stats = policy_loss(logp, old, torch.tensor([1.0, -1.0]), mask, method=method)
        loss.backward()
        assert torch.isfinite(loss) and torch.isfinite(logp.grad).all()
        assert logp.grad[0, 1] == 0 and logp.grad[1, 1] == 0
        assert stats["num_tokens"].item() == 2
    # An all-masked batch gives a zero loss that still backpropagates.
    loss, stats = policy_loss(logp, old, torch.tensor([1.0, -1.0]), torch.zeros(2, 2), method="grpo")
    loss.backward()
    assert loss.item() == 0.0 and stats["ratio_mean"].item() == 0.0


def test_per_token_advantages_match_per_sequence():
    torch.manual_seed(4)
    logp = torch.randn(4, 6, requires_grad=True)
    old = logp.detach() + 0.2 * torch.randn(4, 6)
    adv = torch.randn(4)
    mask = torch.rand(4, 6) > 0.3
    a, _ = policy_loss(logp, old, adv, mask, method="dapo")
    b, _ = policy_loss(logp, old, adv[:, None].expand(4, 6), mask, method="dapo")
    assert torch.equal(a, b)


def test_dtype_device():
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        for dtype in (torch.float32, torch.bfloat16, F64):
            logp = torch.zeros(2, 3, dtype=dtype, device=device, requires_grad=True)
            loss, stats = policy_loss(logp, logp.detach(), torch.ones(2), torch.ones(2, 3), method="cispo")
            loss.backward()
            assert loss.dtype == dtype and loss.device.type == device and logp.grad.dtype == dtype
            assert stats["ratio_mean"].item() == 1.0


def test_validation_messages():
    logp = torch.zeros(2, 3, requires_grad=True)
    ok = dict(old_logp=torch.zeros(2, 3), advantages=torch.ones(2), mask=torch.ones(2, 3))
    cases = [
        (dict(method="ppo"), "method must be one of"),
        (dict(aggregation="sum"), "aggregation must be one of"),
        (dict(cispo_clip="lower"), "cispo_clip must be one of"),
        (dict(eps_low=1.5), "eps_low must be in"),
        (dict(eps_high=-0.1), "eps_high must be in"),
        (dict(advantages=torch.ones(3)), "advantages must be shaped"),
        (dict(mask=torch.ones(2, 4)), "mask must have the shape"),
        (dict(mask=torch.full((2, 3), 0.5)), "mask must contain only 0/1"),
        (dict(old_logp=torch.zeros(3, 3)), "old_logp must have the shape"),
        (dict(old_logp=torch.full((2, 3), math.nan)), "old_logp must be finite"),
    ]
    for override, message in cases:
        kwargs = {**ok, **override}
        with pytest.raises(ValueError, match=message):
            policy_loss(logp, **kwargs)
    with pytest.raises(ValueError, match="logp must be shaped"):
        policy_loss(torch.zeros(3), torch.zeros(3), torch.ones(3), torch.ones(3))


def test_extreme_ratios_stay_finite():
    logp = torch.tensor([[0.0, 0.0]], requires_grad=True)
    old = torch.tensor([[-100.0, 100.0]])  # r = e^100 and e^-100 overflow/underflow float32
    for method in ("grpo", "dapo", "cispo"):
        for adv in (1.0, -1.0):
            logp.grad = None
            loss, stats = policy_loss(logp, old, torch.tensor([adv]), torch.ones(1, 2), method=method)
            loss.backward()
            assert torch.isfinite(loss) and torch.isfinite(logp.grad).all() and torch.isfinite(stats["ratio_max"])
