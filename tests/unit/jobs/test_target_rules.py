"""The kinds a deployment may start (the template's prefix parameters, jobs/targets.py): a kind
that is off is refused with its parameter; a name outside the prefix is refused; a webhook's
prefix holds by scheme, host, port and whole path segments (issue 29's review: a string prefix
let ``https://hooks.example.com.evil.net`` through); a dead-letter queue is held to the queues'
prefix as a queue target is."""

from __future__ import annotations

import pytest

from mini_scheduler.jobs import load
from mini_scheduler.jobs.targets import TargetRules

HOOKS = TargetRules({"https": "https://hooks.example.com", "sqs": "app-"})


def _errors(entry: str, rules: TargetRules = HOOKS) -> list[str]:
    cron_file = load(f"jobs:\n  - {entry}\n", source="t.yaml", targets=rules)
    return [p.message for p in cron_file.problems if p.level == "error"]


@pytest.mark.parametrize(
    ("url", "within"),
    [
        ("https://hooks.example.com/x", True),
        ("https://hooks.example.com:443/x", True),
        ("https://HOOKS.example.com/x", True),
        ("https://hooks.example.com.evil.net/x", False),
        ("https://hooks.example.com:8443/x", False),
        ("https://evil.net/hooks.example.com", False),
    ],
)
def test_a_webhook_is_within_its_prefix_by_host_and_port(url: str, within: bool) -> None:
    found = _errors(f'{{name: hook, cron: "0 * * * * ?", service: "{url}"}}')
    assert (found == []) is within, found
    if not within:
        assert "is outside TargetWebhookPrefix 'https://hooks.example.com'" in found[0]


@pytest.mark.parametrize(
    ("url", "within"),
    [
        ("https://api.example.com/hooks/warm", True),
        ("https://api.example.com/hooks", True),
        ("https://api.example.com/hooksevil", False),
        ("https://api.example.com/other/hooks", False),
    ],
)
def test_a_webhook_prefix_with_a_path_holds_by_whole_segments(url: str, within: bool) -> None:
    rules = TargetRules({"https": "https://api.example.com/hooks"})
    found = _errors(f'{{name: hook, cron: "0 * * * * ?", service: "{url}"}}', rules)
    assert (found == []) is within, found


def test_a_dead_letter_queue_is_held_to_the_queues_prefix() -> None:
    entry = '{{name: job, cron: "0 * * * * ?", service: "fn", dead_letter: "sqs://{}"}}'
    assert _errors(entry.format("app-dlq")) == []
    (outside,) = _errors(entry.format("other-dlq"))
    assert "dead_letter: service 'sqs://other-dlq' is outside TargetQueuePrefix 'app-'" in outside
    (off,) = _errors(entry.format("app-dlq"), TargetRules({"sqs": ""}))
    assert "dead_letter: service 'sqs://app-dlq': sqs targets are off" in off
    assert "TargetQueuePrefix" in off
