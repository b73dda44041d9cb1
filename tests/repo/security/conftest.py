"""The security tests reuse the integration tests' AWS (moto, and DynamoDB Local for the state
table) and the fuzz tests' judge of an answer (a rejection writes nothing)."""

from __future__ import annotations

from tests.system.fuzz.conftest import aws as aws
from tests.system.fuzz.conftest import invoke_recorder as invoke_recorder
from tests.system.fuzz.conftest import invoke_ticker as invoke_ticker
from tests.system.fuzz.conftest import judge as judge
from tests.system.fuzz.conftest import pytest_runtest_makereport as pytest_runtest_makereport
from tests.system.fuzz.conftest import ticked as ticked
