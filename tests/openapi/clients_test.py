"""The Python client generated from the served document by
openapi-python-client drives a real gateway serving the mock model: create
a run, wait for it, read its events. tests/openapi/run generates the client
(as the package `talon_gateway_client`) and runs this file."""

import os
import re
import sys
import traceback

from talon_gateway_client import AuthenticatedClient
from talon_gateway_client.api.runs import runs_create, runs_events, runs_get, runs_wait
from talon_gateway_client.models import (
    ErrorResponse,
    RunsCreateParams,
    RunsEventsParams,
    RunRef,
    RunsWaitParams,
)

client = AuthenticatedClient(base_url=os.environ["TALON_URL"], token=os.environ["TALON_TOKEN"])


def test_a_run_of_the_mock_model():
    created = runs_create.sync_detailed(
        client=client.with_headers({"x-request-id": "py-client-req"}),
        body=RunsCreateParams.from_dict({"input": "What is the answer?", "sessionKey": "py-client"}),
    )
    # The gateway's own request id, never the client's.
    request_id = created.headers["x-request-id"]
    assert re.fullmatch(r"req_[0-9a-f]{24}", request_id), request_id
    accepted = created.parsed.to_dict()
    run_id = accepted["runId"]
    assert isinstance(accepted["createdAt"], int), accepted
    assert accepted == {
        "runId": run_id,
        "id": run_id,
        "agentId": "main",
        "sessionId": accepted["sessionId"],
        "sessionKey": "py-client",
        "status": "queued",
        "summary": "What is the answer?",
        "createdAt": accepted["createdAt"],
    }, accepted

    waited = runs_wait.sync(client=client, body=RunsWaitParams(run_id=run_id, timeout_ms=20_000))
    result = waited.to_dict()
    assert isinstance(result["startedAt"], int) and isinstance(result["endedAt"], int), result
    assert result["output"]["text"] == "The answer is 42.", result
    assert {k: v for k, v in result.items() if k not in ("output", "usage", "artifacts", "startedAt", "endedAt")} == {
        "runId": run_id,
        "status": "completed",
        "sessionId": accepted["sessionId"],
        "sessionKey": "py-client",
    }, result

    page = runs_events.sync(client=client, body=RunsEventsParams(run_id=run_id)).to_dict()
    assert page["done"] is True, page
    types = [event["type"] for event in page["events"]]
    assert types[:2] == ["run.created", "run.started"], types
    assert types[-1] == "run.completed", types
    message = next(event for event in page["events"] if event["type"] == "assistant.message")
    # An admin token reads the provider's native reply too.
    assert message.get("raw"), message
    assert {k: v for k, v in message.items() if k not in ("id", "ts", "data", "raw")} == {
        "version": 1,
        "type": "assistant.message",
        "runId": run_id,
        "sessionId": accepted["sessionId"],
        "sessionKey": "py-client",
        "agentId": "main",
        "requestId": request_id,
    }, message
    assert all(isinstance(event["ts"], int) for event in page["events"]), page
    # Every event of the run names the call that created it.
    assert all(event.get("requestId") == request_id for event in page["events"]), page


def test_an_error_is_the_one_error_response():
    missing = runs_get.sync_detailed(client=client, body=RunRef(run_id="run_nope"))
    assert missing.status_code == 404, missing
    assert isinstance(missing.parsed, ErrorResponse), missing.parsed
    error = missing.parsed.to_dict()
    assert error == {
        "error": {"code": "not_found", "message": error["error"]["message"], "retryable": False}
    }, error


if __name__ == "__main__":
    passed = failed = 0
    for name, test in list(globals().items()):
        if name.startswith("test_") and callable(test):
            try:
                test()
                passed += 1
                print(f"ok {name}")
            except Exception:
                failed += 1
                print(f"FAILED {name}")
                traceback.print_exc()
    print(f"python client: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
