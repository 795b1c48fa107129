"""The client against the running API: resources, paging, errors, languages, tenants."""

from __future__ import annotations

import unittest
from typing import Optional, Tuple

from lms_platform_api import (
    BadRequestError,
    ConflictError,
    ForbiddenError,
    LmsApiError,
    LmsClient,
    NotFoundError,
    PreconditionFailedError,
    Resource,
    ThrottledError,
    UnauthorizedError,
)
from lms_platform_api.schema import RagJob

from .support import TestServer, api_base_url, client, token, unique_email, wait_for


class ProjectsTest(unittest.TestCase):
    def test_create_get_update_with_if_match_and_delete(self) -> None:
        lms = client()
        owner = unique_email("python")
        created = lms.projects.create(name="Onboarding", description="Made from Python", owner=owner)
        self.assertIsInstance(created, Resource)
        self.assertEqual((created["name"], created["description"], created["owner"], created["status"]), ("Onboarding", "Made from Python", owner, "Active"))
        self.assertTrue(created.etag)
        self.assertTrue(created.headers["Location"].endswith(f"/projects/{created['id']}"))

        read = lms.projects.get(created["id"])
        self.assertEqual(read, created)
        self.assertEqual(read.etag, created.etag)
        self.assertIsNone(lms.projects.get(created["id"], if_none_match=read.etag))

        updated = lms.projects.update(created["id"], status="OnHold", if_match=read.etag)
        self.assertEqual(updated["status"], "OnHold")
        self.assertNotEqual(updated.etag, read.etag)

        with self.assertRaises(PreconditionFailedError) as stale:
            lms.projects.update(created["id"], name="Too late", if_match=read.etag)
        self.assertEqual((stale.exception.status, stale.exception.error), (412, "Precondition Failed"))
        self.assertEqual(stale.exception.request_id, stale.exception.headers["X-Request-Id"])

        lms.projects.delete(created["id"], if_match=updated.etag)
        with self.assertRaises(NotFoundError) as gone:
            lms.projects.get(created["id"])
        self.assertEqual(gone.exception.status, 404)

    def test_list_follows_link_across_pages_lazily(self) -> None:
        lms = client()
        owner = unique_email("python-paging")
        made = [lms.projects.create(name=f"Paged {n}", owner=owner) for n in range(1, 6)]

        pages = list(lms.projects.list(owner=owner, sort="createdAt", limit=2).pages())
        self.assertEqual([[project["name"] for project in page] for page in pages], [["Paged 1", "Paged 2"], ["Paged 3", "Paged 4"], ["Paged 5"]])
        # Each item as created, with the ETag a read gives, for a conditional update straight from the list.
        self.assertEqual(list(lms.projects.list(owner=owner, sort="createdAt", limit=2)), [{**project, "etag": project.etag} for project in made])

        # Lazily: taking the first item reads one page, so a 400 in the query surfaces only on iteration.
        listing = lms.projects.list(limit=500)
        with self.assertRaises(BadRequestError) as refused:
            next(iter(listing))
        self.assertEqual(refused.exception.status, 400)
        self.assertIn("limit", refused.exception.details[0].path)  # type: ignore[index]

    def test_tasks_in_a_project(self) -> None:
        lms = client()
        project = lms.projects.create(name="With tasks", owner=unique_email("python-tasks"))
        task = lms.tasks.create(project_id=project["id"], title="Record the welcome video", priority="High", due_date="2027-01-15", assignee="kim@contoso.test")
        # Out in snake case, as it went in; the dict keeps the API's names.
        self.assertEqual((task.project_id, task.priority, task.due_date, task.status), (project["id"], "High", "2027-01-15", "Todo"))
        self.assertEqual((task["projectId"], task["dueDate"]), (task.project_id, task.due_date))
        done = lms.tasks.update(task["id"], status="Done", due_date=None, if_match=task.etag)
        self.assertEqual((done.status, done.due_date, done.assignee), ("Done", None, "kim@contoso.test"))
        unassigned = lms.tasks.update(task["id"], assignee=None)
        self.assertEqual((unassigned.assignee, unassigned.status), (None, "Done"))
        self.assertEqual([listed["id"] for listed in lms.tasks.list(project_id=project["id"])], [task["id"]])
        lms.tasks.delete(task["id"])
        self.assertEqual(list(lms.tasks.list(project_id=project["id"])), [])


class ErrorsTest(unittest.TestCase):
    def test_an_error_answer_is_raised_with_its_fields_in_english(self) -> None:
        with self.assertRaises(NotFoundError) as missing:
            client().projects.get("PRJ-999999")
        error = missing.exception
        self.assertIsInstance(error, LmsApiError)
        self.assertEqual((error.status, error.error, error.message), (404, "Not Found", "Project PRJ-999999 does not exist."))
        self.assertTrue(error.request_id)
        self.assertEqual((error.body["requestId"], error.body.request_id), (error.request_id, error.request_id))
        self.assertEqual(str(error), f"404 Not Found: Project PRJ-999999 does not exist. (request {error.request_id})")

    def test_str_of_a_validation_error_names_what_was_refused(self) -> None:
        with self.assertRaises(BadRequestError) as invalid:
            client().tasks.create(project_id="PRJ-1", title="", priority="Soon")  # type: ignore[arg-type]
        error = invalid.exception
        self.assertGreaterEqual(len(error.details or []), 2)
        for detail in error.details or []:
            self.assertIn(f"{detail.path}: {detail.message}", str(error))
        self.assertIn("title", str(error))
        self.assertIn("priority", str(error))

    def test_each_status_an_integrator_branches_on_has_its_error_class(self) -> None:
        with self.assertRaises(UnauthorizedError):
            LmsClient(api_base_url(), token="not-a-token").users.me()
        with self.assertRaises(ForbiddenError):
            client(role="LMS.Reader").projects.create(name="Not mine to make")
        answers = {
            409: (ConflictError, b'{"error":"Conflict","message":"A RAG job is running.","status":409,"activeJobId":"a-job"}'),
            429: (ThrottledError, b'{"error":"Too Many Requests","message":"Slow down.","status":429}'),
        }
        for status, (error_class, body) in answers.items():
            with self.subTest(status):
                server = TestServer(lambda _index, _request: ("answer", status, {"Content-Type": "application/json", "Retry-After": "3600"}, body))
                self.addCleanup(server.close)
                with self.assertRaises(error_class) as raised:
                    LmsClient(f"{server.url}/api", token="a-token").rag.rebuild()
                self.assertEqual((raised.exception.status, raised.exception.retry_after), (status, 3600.0))

    def test_default_headers_bring_messages_in_japanese(self) -> None:
        lms = client(headers={"Accept-Language": "ja"})
        with self.assertRaises(LmsApiError) as missing:
            lms.projects.get("PRJ-999999")
        self.assertEqual(missing.exception.message, "プロジェクト PRJ-999999 は存在しません。")
        with self.assertRaises(LmsApiError) as invalid:
            lms.projects.create(name="")
        self.assertEqual((invalid.exception.status, invalid.exception.message), (400, "リクエストが正しくありません。details を確認してください。"))
        self.assertEqual(invalid.exception.details[0]["path"], "name")  # type: ignore[index]

    def test_a_role_without_the_permission_is_refused(self) -> None:
        with self.assertRaises(LmsApiError) as refused:
            client(role="LMS.Reader").projects.create(name="Not mine to make")
        self.assertEqual(refused.exception.status, 403)


class TenantsTest(unittest.TestCase):
    def test_the_second_local_tenant_sees_nothing_of_the_first(self) -> None:
        owner = unique_email("python-tenant")
        project = client().projects.create(name="Home only", owner=owner)
        neighbour = client(tenant="other")
        self.assertEqual(list(neighbour.projects.list(owner=owner)), [])
        with self.assertRaises(LmsApiError) as hidden:
            neighbour.projects.get(project["id"])
        self.assertEqual(hidden.exception.status, 404)
        with self.assertRaises(LmsApiError):
            neighbour.projects.delete(project["id"])
        self.assertEqual(client().projects.get(project["id"])["name"], "Home only")


class UsersAndRagTest(unittest.TestCase):
    def test_me_is_the_caller_and_is_listed(self) -> None:
        lms = client()
        me = lms.users.me()
        self.assertEqual(me["email"], "python-client@contoso.test")
        self.assertIn(me["id"], [user["id"] for user in lms.users.list()])
        self.assertIsNone(lms.users.me(if_none_match=me.etag))

    def test_a_rebuild_is_followed_to_its_end(self) -> None:
        # In the second tenant, whose RAG job other tests may hold or cancel: the first tenant's belong to the RAG tests.
        lms = client(tenant="other")
        project = lms.projects.create(name="Indexed from Python", owner=unique_email("python-rag"))
        started, ended = wait_for(lambda: _rebuilt(lms, project["id"]), timeout=180, what="a rebuild of the tenant's own to succeed")
        self.assertEqual(started.headers["Location"].rsplit("/", 1)[-1], started["jobId"])
        # `written` counts what the job did in its scope (the new project's one chunk); `sources`, what the whole index holds.
        self.assertEqual((ended.status, ended.project_ids, ended.counts.written), ("Succeeded", [project["id"]], 1))
        self.assertGreaterEqual(ended.counts.sources, 1)
        self.assertIn(started["jobId"], [job["jobId"] for job in lms.rag.jobs.list(limit=50)])


def _rebuilt(lms: LmsClient, project_id: str) -> Optional[Tuple[Resource[RagJob], Resource[RagJob]]]:
    """A rebuild started and followed to Succeeded; None when another test's job stood in the way (409) or cancelled this one."""
    try:
        started = lms.rag.rebuild(project_ids=[project_id])
    except ConflictError as busy:
        lms.rag.jobs.wait(busy.body.active_job_id, timeout=120, interval=0.2)
        return None
    ended = lms.rag.jobs.wait(started["jobId"], timeout=120, interval=0.2)
    return (started, ended) if ended["status"] == "Succeeded" else None


class TokensTest(unittest.TestCase):
    def test_a_token_given_as_a_string_is_sent_as_it_is(self) -> None:
        self.assertEqual(LmsClient(api_base_url(), token=token(role="LMS.Reader")).users.me()["roles"], ["LMS.Reader"])
