"""template.yaml as one region's stack would have it: its parameters given, its conditions
resolved, the resources whose condition is false left out and each ``Fn::If`` replaced by the
branch it takes (``AWS::NoValue`` dropped). Only what the template's conditions use is
evaluated (Ref, Equals, Not, And, Or, Condition, Select, Split, Sub of parameters); every other
value is kept as written."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

Template = dict[str, Any]

_DROPPED = object()


def parameters(template: Template, given: Mapping[str, str], region: str) -> dict[str, str]:
    """The parameters' values: ``given``, else their defaults; the pseudo-parameters too."""
    values = {name: str(p.get("Default", "")) for name, p in template["Parameters"].items()}
    unknown = set(given) - set(values)
    assert not unknown, f"template.yaml has no parameters {sorted(unknown)}"
    values.update(given)
    values.update({"AWS::Region": region, "AWS::Partition": "aws", "AWS::AccountId": "1" * 12})
    return values


def conditions(template: Template, values: Mapping[str, str]) -> dict[str, bool]:
    """Every condition of the template, resolved with ``values``."""
    found: dict[str, bool] = {}

    def condition(name: str) -> bool:
        if name not in found:
            found[name] = bool(evaluate(template["Conditions"][name], values, condition))
        return found[name]

    for name in template["Conditions"]:
        condition(name)
    return found


def evaluate(node: Any, values: Mapping[str, str], condition: Any) -> Any:
    """A condition's expression, or a value built of parameters, evaluated."""
    if not isinstance(node, Mapping):
        return node
    ((key, arg),) = node.items()
    if key == "Ref":
        return values[arg]
    if key in ("Condition", "Fn::Condition"):
        return condition(arg)
    if key == "Fn::Equals":
        left, right = (evaluate(a, values, condition) for a in arg)
        return str(left) == str(right)
    if key == "Fn::Not":
        return not evaluate(arg[0], values, condition)
    if key == "Fn::And":
        return all(evaluate(a, values, condition) for a in arg)
    if key == "Fn::Or":
        return any(evaluate(a, values, condition) for a in arg)
    if key == "Fn::Select":
        return evaluate(arg[1], values, condition)[int(arg[0])]
    if key == "Fn::Split":
        return str(evaluate(arg[1], values, condition)).split(arg[0])
    if key == "Fn::Sub" and isinstance(arg, str):
        return re.sub(r"\$\{([A-Za-z0-9:]+)\}", lambda m: values[m.group(1)], arg)
    raise AssertionError(f"cannot evaluate {node!r}")


def stack(template: Template, given: Mapping[str, str], region: str = "us-east-1") -> Template:
    """The template with ``given`` parameters in ``region``: the resources and outputs whose
    condition holds, each ``Fn::If`` resolved. Keeps the parameter values and the conditions
    under ``Values`` and ``Resolved``."""
    values = parameters(template, given, region)
    resolved = conditions(template, values)

    def choose(node: Any) -> Any:
        if isinstance(node, list):
            return [item for item in (choose(i) for i in node) if item is not _DROPPED]
        if not isinstance(node, Mapping):
            return node
        if set(node) == {"Fn::If"}:
            name, when_true, when_false = node["Fn::If"]
            return choose(when_true if resolved[name] else when_false)
        if node == {"Ref": "AWS::NoValue"}:
            return _DROPPED
        chosen = {key: choose(value) for key, value in node.items()}
        return {key: value for key, value in chosen.items() if value is not _DROPPED}

    def kept(section: str) -> dict[str, Any]:
        return {
            name: choose(item)
            for name, item in template.get(section, {}).items()
            if resolved.get(item.get("Condition", ""), True)
        }

    return {
        "Values": values,
        "Resolved": resolved,
        "Resources": kept("Resources"),
        "Outputs": kept("Outputs"),
    }


def value(node: Any, values: Mapping[str, str]) -> Any:
    """A resolved value whose parameters (Ref, Fn::Sub, Select, Split) can be evaluated; a
    Ref or GetAtt of a resource is kept as written."""
    if isinstance(node, Mapping) and "Ref" in node and node["Ref"] not in values:
        return node
    if isinstance(node, Mapping) and "Fn::GetAtt" in node:
        return node
    return evaluate(node, values, no_condition)


def no_condition(name: str) -> bool:
    raise AssertionError(f"a value names the condition {name}")
