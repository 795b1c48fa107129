"""
Every operation of openapi.json is reachable from the client: the test walks the document, calls
the method that sends each operation against a server of its own that records the request, and
checks the method and path, and that the method takes each of the operation's parameters.
"""

from __future__ import annotations

import inspect
import json
import re
import unittest
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

from lms_platform_api import LmsClient

from .support import TestServer

DOCUMENT = Path(__file__).resolve().parents[3] / "openapi.json"
PROJECT, TASK, JOB, WEBHOOK, DELIVERY, EVENT = "PRJ-1001", "TSK-1001", "5b0e8f3a-9c2d-4e1f-8a7b-6c5d4e3f2a1b", "whk-1", "dlv-1", "msg_1"

#: For each operation: the method that sends it, and a call of it.
CALLS: Dict[str, Tuple[str, Callable[[LmsClient], Any]]] = {
    "projectsList": ("projects.list", lambda lms: list(lms.projects.list(status="Active", limit=10))),
    "projectsCreate": ("projects.create", lambda lms: lms.projects.create(name="Walked")),
    "projectsGet": ("projects.get", lambda lms: lms.projects.get(PROJECT)),
    "projectsUpdate": ("projects.update", lambda lms: lms.projects.update(PROJECT, status="OnHold")),
    "projectsDelete": ("projects.delete", lambda lms: lms.projects.delete(PROJECT)),
    "tasksList": ("tasks.list", lambda lms: list(lms.tasks.list(project_id=PROJECT))),
    "tasksCreate": ("tasks.create", lambda lms: lms.tasks.create(project_id=PROJECT, title="Walked")),
    "tasksGet": ("tasks.get", lambda lms: lms.tasks.get(TASK)),
    "tasksUpdate": ("tasks.update", lambda lms: lms.tasks.update(TASK, status="Done")),
    "tasksDelete": ("tasks.delete", lambda lms: lms.tasks.delete(TASK)),
    "usersList": ("users.list", lambda lms: list(lms.users.list(source="directory"))),
    "usersMe": ("users.me", lambda lms: lms.users.me()),
    "ragIndexStart": ("rag.rebuild", lambda lms: lms.rag.rebuild(mode="full")),
    "ragJobsList": ("rag.jobs.list", lambda lms: list(lms.rag.jobs.list())),
    "ragJobsGet": ("rag.jobs.get", lambda lms: lms.rag.jobs.get(JOB)),
    "ragJobsCancel": ("rag.jobs.cancel", lambda lms: lms.rag.jobs.cancel(JOB)),
    "webhooksList": ("webhooks.list", lambda lms: list(lms.webhooks.list())),
    "webhooksCreate": ("webhooks.create", lambda lms: lms.webhooks.create(url="https://example.test/hook")),
    "webhooksGet": ("webhooks.get", lambda lms: lms.webhooks.get(WEBHOOK)),
    "webhooksUpdate": ("webhooks.update", lambda lms: lms.webhooks.update(WEBHOOK, active=True)),
    "webhooksDelete": ("webhooks.delete", lambda lms: lms.webhooks.delete(WEBHOOK)),
    "webhookDeliveriesList": ("webhooks.deliveries.list", lambda lms: list(lms.webhooks.deliveries.list(WEBHOOK))),
    "webhookDeliveriesRetry": ("webhooks.deliveries.retry", lambda lms: lms.webhooks.deliveries.retry(WEBHOOK, DELIVERY)),
    "webhooksPing": ("webhooks.ping", lambda lms: lms.webhooks.ping(WEBHOOK)),
    "webhooksRotateSecret": ("webhooks.rotate_secret", lambda lms: lms.webhooks.rotate_secret(WEBHOOK)),
    "eventsList": ("events.list", lambda lms: list(lms.events.list(type="project.created", since=datetime(2027, 1, 15, tzinfo=timezone.utc)))),
    "eventsGet": ("events.get", lambda lms: lms.events.get(EVENT)),
    "docsGet": ("docs.page", lambda lms: lms.docs.page()),
    "docsFilesGet": ("docs.file", lambda lms: lms.docs.file("swagger-ui.css")),
    "openapiGet": ("docs.openapi", lambda lms: lms.docs.openapi()),
}
HEADER_KEYWORDS = {"If-Match": "if_match", "If-None-Match": "if_none_match", "Idempotency-Key": "idempotency_key"}


def snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def operations() -> Dict[str, Tuple[str, str, Dict[str, Any]]]:
    document = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    found = {}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if isinstance(operation, dict) and "operationId" in operation:
                found[operation["operationId"]] = (method.upper(), path, _resolved(document, operation))
    return found


def _resolved(document: Dict[str, Any], value: Any) -> Any:
    """The operation with every `$ref` replaced by what it names."""
    if isinstance(value, dict):
        if "$ref" in value:
            target: Any = document
            for part in value["$ref"].lstrip("#/").split("/"):
                target = target[part]
            return _resolved(document, target)
        return {key: _resolved(document, item) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolved(document, item) for item in value]
    return value


def method_of(lms: LmsClient, dotted: str) -> Callable[..., Any]:
    target: Any = lms
    for name in dotted.split("."):
        target = getattr(target, name)
    return target


class OperationsTest(unittest.TestCase):
    def test_every_operation_of_the_document_has_a_method(self) -> None:
        documented = set(operations())
        self.assertEqual(sorted(documented - set(CALLS)), [], "operations of openapi.json the client does not reach")
        self.assertEqual(sorted(set(CALLS) - documented), [], "methods for operations openapi.json does not have")

    def test_each_method_sends_its_operation(self) -> None:
        recorder = TestServer(lambda _index, _request: ("answer", 200, {"Content-Type": "application/json"}, b"[]"))
        self.addCleanup(recorder.close)
        lms = LmsClient(f"{recorder.url}/api", token="walk")
        documented = operations()
        for operation_id, (_method, call) in CALLS.items():
            with self.subTest(operation_id):
                before = len(recorder.received)
                call(lms)
                sent: List[Any] = recorder.received[before:]
                self.assertEqual(len(sent), 1)
                if operation_id not in documented:
                    continue
                method, template, _operation = documented[operation_id]
                pattern = "/api" + re.sub(r"\\\{[^}]+\\\}", "[^/?]+", re.escape(template)) + r"(\?.*)?"
                self.assertEqual(sent[0].method, method)
                self.assertRegex(sent[0].path, f"^{pattern}$")
                self.assertEqual(sent[0].headers["Authorization"], "Bearer walk")

    def test_each_method_takes_every_parameter_of_its_operation(self) -> None:
        lms = LmsClient("http://localhost:7071/api", token="walk")
        for operation_id, (_method, _path, operation) in operations().items():
            with self.subTest(operation_id):
                accepted = inspect.signature(method_of(lms, CALLS[operation_id][0])).parameters
                wanted = []
                for parameter in operation.get("parameters", []):
                    header = parameter["in"] == "header"
                    wanted.append(HEADER_KEYWORDS[parameter["name"]] if header else snake(parameter["name"]))
                body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
                if body:
                    wanted += [snake(name) for name in body.get("properties", {})]
                self.assertEqual(sorted(set(wanted) - set(accepted)), [], f"parameters of {operation_id} its method does not take")

    def test_keyword_arguments_in_snake_case_are_sent_under_the_apis_names(self) -> None:
        recorder = TestServer(lambda _index, _request: ("answer", 200, {"Content-Type": "application/json"}, b"{}"))
        self.addCleanup(recorder.close)
        lms = LmsClient(f"{recorder.url}/api", token="walk")
        sent: Dict[str, Tuple[Callable[[], Any], Dict[str, Any]]] = {
            "a create": (lambda: lms.tasks.create(project_id=PROJECT, title="Walked", due_date="2027-01-15"), {"projectId": PROJECT, "title": "Walked", "dueDate": "2027-01-15"}),
            "an update that clears": (lambda: lms.tasks.update(TASK, due_date=None, assignee=None), {"assignee": None, "dueDate": None}),
            "an update that leaves the rest": (lambda: lms.tasks.update(TASK, title="Renamed"), {"title": "Renamed"}),
            "a rebuild": (lambda: lms.rag.rebuild(project_ids=[PROJECT]), {"projectIds": [PROJECT]}),
            "a subscription's update": (lambda: lms.webhooks.update(WEBHOOK, active=True), {"active": True}),
        }
        for case, (call, body) in sent.items():
            with self.subTest(case):
                before = len(recorder.received)
                call()
                self.assertEqual(json.loads(recorder.received[before].body), body)
