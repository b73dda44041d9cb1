"""Translate template.yaml into plain CloudFormation, offline, as `sam package` + the SAM
transform would: run by the tests with the SAM CLI's interpreter (.venv-sam), which has
aws-sam-translator; .venv does not.

    .venv-sam/bin/python tests/repo/template/translate.py \\
        template.yaml out.json [--region us-east-1]

Like `sam package`, local code locations become S3 objects: each function's CodeUri becomes
s3://<ARTIFACT_BUCKET>/<logical id>.zip; a state machine's DefinitionUri becomes the definition
itself (inline), because moto's CloudFormation reads only DefinitionString.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ARTIFACT_BUCKET = "mini-scheduler-artifacts"


def package(template: dict[str, Any], root: Path) -> dict[str, Any]:
    for name, resource in template.get("Resources", {}).items():
        properties = resource.get("Properties", {})
        if resource.get("Type") == "AWS::Serverless::Function":
            properties["CodeUri"] = f"s3://{ARTIFACT_BUCKET}/{name}.zip"
        elif resource.get("Type") == "AWS::Serverless::StateMachine" and (
            "DefinitionUri" in properties
        ):
            path = root / properties.pop("DefinitionUri")
            properties["Definition"] = json.loads(path.read_text(encoding="utf-8"))
    return template


def translate(source: Path, region: str) -> dict[str, Any]:
    from boto3.session import Session

    # aws-sam-translator is in .venv-sam only
    from samtranslator.parser.parser import Parser  # type: ignore[import-not-found]
    from samtranslator.translator.translator import Translator  # type: ignore[import-not-found]
    from samtranslator.yaml_helper import yaml_parse  # type: ignore[import-not-found]

    template = package(yaml_parse(source.read_text(encoding="utf-8")), source.parent)
    translator = Translator(
        managed_policy_map=None,
        sam_parser=Parser(),
        plugins=[],
        boto_session=Session(region_name=region),
    )
    translated: dict[str, Any] = translator.translate(
        sam_template=template, parameter_values={}, get_managed_policy_map=lambda: {}
    )
    return translated


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("template", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--region", default="us-east-1")
    args = parser.parse_args(argv)
    translated = translate(args.template, args.region)
    args.output.write_text(json.dumps(translated, indent=1, sort_keys=True), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
