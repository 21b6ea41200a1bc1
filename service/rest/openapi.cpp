// The OpenAPI 3.1 document of the REST API. A test walks it against rest_api::routes() in both
// directions, so a route cannot be added or removed without this document following, and an
// end-to-end test has a real validator read it as airlock serves it.
//
// Its one server is "/": a relative URL, resolved against the document's own address. Behind a
// reverse proxy that is the proxy's scheme, host and port, with nothing to configure and no
// X-Forwarded-Host to believe; built from the request's Host instead, it would name the address
// airlock listens on, which the client may not reach. airlock is served at the root of its host
// (the OAuth resource metadata lives at /.well-known/ there too), so "/" is where /v1 hangs.

#include "service/rest/rest_api.hpp"

#include <boost/json/parse.hpp>

namespace airlock::service {

namespace {

// Written as JSON, not built in code: it reads like the document it is, and a reviewer can diff it.
constexpr char const* openapi_text = R"json({
  "openapi": "3.1.0",
  "info": {
    "title": "airlock REST API",
    "version": "1",
    "description": "Start, inspect, cancel, replay and verify agent runs; answer approval requests; list agents and tools. Every error is an RFC 9457 problem document (application/problem+json) whose errors name the field at fault."
  },
  "servers": [{"url": "/", "description": "Relative to where this document was fetched from, so it names the address the client used, a reverse proxy's included"}],
  "security": [{"bearer": []}],
  "paths": {
    "/v1/openapi.json": {
      "get": {"summary": "This document; served without a token (it discloses nothing)", "operationId": "getOpenapi",
        "security": [],
        "responses": {"200": {"description": "The OpenAPI document", "content": {"application/json": {"schema": {"type": "object"}}}},
                      "400": {"$ref": "#/components/responses/Problem"}, "403": {"$ref": "#/components/responses/Problem"}}}
    },
    "/v1/runs": {
      "get": {
        "summary": "List runs, oldest run id first: the caller's own, or every run for an operator", "operationId": "listRuns",
        "parameters": [
          {"name": "status", "in": "query", "schema": {"$ref": "#/components/schemas/RunStatus"}},
          {"name": "agent", "in": "query", "schema": {"type": "string"}},
          {"name": "kind", "in": "query", "description": "agent (the default): runs of agents; session: gateway sessions; airlock: airlock's own; all: every kind", "schema": {"enum": ["agent", "session", "airlock", "all"], "default": "agent"}},
          {"name": "since", "in": "query", "description": "Runs admitted at or after this RFC 3339 UTC time", "schema": {"type": "string", "format": "date-time"}},
          {"name": "cursor", "in": "query", "description": "next_cursor of the previous page", "schema": {"type": "string"}},
          {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}},
          {"name": "principal", "in": "query", "description": "Operators only: runs this principal owns", "schema": {"type": "string"}}
        ],
        "responses": {
          "200": {"description": "One page of runs", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RunPage"}}}},
          "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
          "403": {"$ref": "#/components/responses/Problem"}
        }
      },
      "post": {
        "summary": "Start a run of an agent (by name or by a capability it provides)", "operationId": "startRun",
        "parameters": [
          {"name": "wait", "in": "query", "description": "Seconds to wait for the run to end or ask for approval", "schema": {"type": "integer", "minimum": 0, "maximum": 60}}
        ],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RunRequest"}}}},
        "responses": {
          "200": {"description": "The run ended (or awaits approval) within ?wait", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Run"}}}},
          "202": {"description": "The run is admitted (or the idempotency key names an earlier run)", "headers": {"Location": {"schema": {"type": "string"}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Run"}}}},
          "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
          "415": {"$ref": "#/components/responses/Problem"}, "422": {"$ref": "#/components/responses/Problem"},
          "429": {"description": "Too many runs at once", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
          "503": {"$ref": "#/components/responses/Problem"}
        }
      }
    },
    "/v1/runs/{id}": {
      "parameters": [{"$ref": "#/components/parameters/RunId"}],
      "get": {"summary": "One run: summary, input, output, counts", "operationId": "getRun",
        "responses": {"200": {"description": "The run", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Run"}}}},
                      "401": {"$ref": "#/components/responses/Problem"}, "404": {"$ref": "#/components/responses/Problem"}}}
    },
    "/v1/runs/{id}/journal": {
      "parameters": [{"$ref": "#/components/parameters/RunId"}],
      "get": {"summary": "The run's journal records, one JSON object per line", "operationId": "getRunJournal",
        "parameters": [{"name": "from_seq", "in": "query", "schema": {"type": "integer", "minimum": 1, "default": 1}}],
        "responses": {"200": {"description": "JSON lines", "content": {"application/jsonl": {"schema": {"$ref": "#/components/schemas/Record"}}}},
                      "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                      "404": {"$ref": "#/components/responses/Problem"}}}
    },
    "/v1/runs/{id}/cancel": {
      "parameters": [{"$ref": "#/components/parameters/RunId"}],
      "post": {"summary": "Ask a run to stop at its next step", "operationId": "cancelRun",
        "responses": {"202": {"description": "Cancellation requested", "content": {"application/json": {"schema": {"type": "object", "properties": {"run_id": {"type": "string"}, "cancel_requested": {"type": "boolean"}}}}}},
                      "401": {"$ref": "#/components/responses/Problem"}, "404": {"$ref": "#/components/responses/Problem"},
                      "409": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}}}
    },
    "/v1/runs/{id}/replay": {
      "parameters": [{"$ref": "#/components/parameters/RunId"}],
      "post": {"summary": "Strict replay from the journal alone: no model call, no tool call", "operationId": "replayRun",
        "responses": {"200": {"description": "The replay reproduced the run", "content": {"application/json": {"schema": {"type": "object"}}}},
                      "401": {"$ref": "#/components/responses/Problem"}, "404": {"$ref": "#/components/responses/Problem"},
                      "409": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}}}
    },
    "/v1/runs/{id}/verify": {
      "parameters": [{"$ref": "#/components/parameters/RunId"}],
      "get": {"summary": "Verify the run's hash chain", "operationId": "verifyRun",
        "responses": {"200": {"description": "Whether every record verifies, and the first fault if not", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Verification"}}}},
                      "401": {"$ref": "#/components/responses/Problem"}, "404": {"$ref": "#/components/responses/Problem"}}}
    },
    "/v1/runs/{id}/approvals": {
      "parameters": [{"$ref": "#/components/parameters/RunId"}],
      "get": {"summary": "The run's approval requests and their decisions", "operationId": "listApprovals",
        "parameters": [{"name": "status", "in": "query", "schema": {"enum": ["pending", "approved", "rejected", "withdrawn"]}}],
        "responses": {"200": {"description": "Approvals", "content": {"application/json": {"schema": {"type": "object", "properties": {"run_id": {"type": "string"}, "approvals": {"type": "array", "items": {"$ref": "#/components/schemas/Approval"}}}}}}},
                      "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                      "404": {"$ref": "#/components/responses/Problem"}}}
    },
    "/v1/runs/{id}/approvals/{effect}": {
      "parameters": [{"$ref": "#/components/parameters/RunId"},
                     {"name": "effect", "in": "path", "required": true, "description": "The effect key, percent-encoded", "schema": {"type": "string"}}],
      "post": {"summary": "Approve or reject a pending call (operators only)", "operationId": "decideApproval",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Decision"}}}},
        "responses": {"200": {"description": "The decision is recorded", "content": {"application/json": {"schema": {"type": "object"}}}},
                      "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                      "403": {"$ref": "#/components/responses/Problem"},
                      "404": {"$ref": "#/components/responses/Problem"}, "409": {"$ref": "#/components/responses/Problem"},
                      "422": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}}}
    },
    "/v1/agents": {
      "get": {"summary": "The agents this server runs", "operationId": "listAgents",
        "responses": {"200": {"description": "Agents", "content": {"application/json": {"schema": {"type": "object", "properties": {"agents": {"type": "array", "items": {"$ref": "#/components/schemas/Agent"}}}}}}},
                      "401": {"$ref": "#/components/responses/Problem"}}}
    },
    "/v1/tools": {
      "get": {"summary": "The gateway tools the caller may call", "operationId": "listTools",
        "responses": {"200": {"description": "Tools, as MCP tool objects", "content": {"application/json": {"schema": {"type": "object", "properties": {"tools": {"type": "array", "items": {"type": "object"}}}}}}},
                      "401": {"$ref": "#/components/responses/Problem"}}}
    },
    "/v1/pins": {
      "get": {"summary": "Every pinned upstream tool definition and whether a changed one awaits acceptance (operators only)", "operationId": "listPins",
        "responses": {"200": {"description": "Pins", "content": {"application/json": {"schema": {"type": "object", "properties": {"pins": {"type": "array", "items": {"$ref": "#/components/schemas/Pin"}}}}}}},
                      "401": {"$ref": "#/components/responses/Problem"}, "403": {"$ref": "#/components/responses/Problem"},
                      "503": {"$ref": "#/components/responses/Problem"}}}
    },
    "/v1/pins/{server}/{tool}": {
      "parameters": [{"$ref": "#/components/parameters/PinServer"}, {"$ref": "#/components/parameters/PinTool"}],
      "get": {"summary": "One pin: its pinned and its pending definition and what changed (operators only)", "operationId": "getPin",
        "responses": {"200": {"description": "The pin", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PinReview"}}}},
                      "401": {"$ref": "#/components/responses/Problem"}, "403": {"$ref": "#/components/responses/Problem"},
                      "404": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}}}
    },
    "/v1/pins/{server}/{tool}/accept": {
      "parameters": [{"$ref": "#/components/parameters/PinServer"}, {"$ref": "#/components/parameters/PinTool"}],
      "post": {"summary": "Make the pending definition the pinned one; the running gateway serves it at once (operators only)", "operationId": "acceptPin",
        "requestBody": {"required": false, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": false, "properties": {
          "pending_digest": {"type": "string", "description": "The digest of the definition reviewed: refused with 409 if the pending one is another"}}}}}},
        "responses": {"200": {"description": "The pin as accepted", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pin"}}}},
                      "400": {"$ref": "#/components/responses/Problem"}, "401": {"$ref": "#/components/responses/Problem"},
                      "403": {"$ref": "#/components/responses/Problem"}, "404": {"$ref": "#/components/responses/Problem"},
                      "409": {"$ref": "#/components/responses/Problem"}, "415": {"$ref": "#/components/responses/Problem"},
                      "422": {"$ref": "#/components/responses/Problem"}, "503": {"$ref": "#/components/responses/Problem"}}}
    }
  },
  "components": {
    "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
    "parameters": {
      "RunId": {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
      "PinServer": {"name": "server", "in": "path", "required": true, "description": "The upstream's name", "schema": {"type": "string"}},
      "PinTool": {"name": "tool", "in": "path", "required": true, "description": "The tool's own name at the upstream, percent-encoded", "schema": {"type": "string"}}
    },
    "responses": {
      "Problem": {"description": "An RFC 9457 problem", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}
    },
    "schemas": {
      "Problem": {"type": "object", "required": ["type", "title", "status", "detail"], "properties": {
        "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"}, "detail": {"type": "string"},
        "errors": {"type": "array", "items": {"type": "object", "required": ["field", "message"], "properties": {"field": {"type": "string"}, "message": {"type": "string"}}}}}},
      "RunStatus": {"enum": ["running", "succeeded", "failed", "exhausted", "awaiting_approval", "quarantined", "cancelled"]},
      "RunRequest": {"type": "object", "required": ["input"], "additionalProperties": false, "properties": {
        "agent": {"type": "string"}, "capability": {"type": "string"}, "input": {},
        "idempotency_key": {"type": "string", "minLength": 1, "maxLength": 200}},
        "oneOf": [{"required": ["agent"]}, {"required": ["capability"]}]},
      "RunSummary": {"type": "object", "properties": {
        "run_id": {"type": "string"}, "agent": {"type": "string"}, "kind": {"enum": ["agent", "session", "airlock"]}, "status": {"$ref": "#/components/schemas/RunStatus"},
        "admitted_at": {"type": "string"}, "principal": {"type": ["string", "null"], "description": "The run's owner; null: nobody (operators only see it)"}, "head_seq": {"type": "integer"}, "head_hash": {"type": "string"}, "sealed": {"type": "boolean"}}},
      "RunPage": {"type": "object", "properties": {
        "runs": {"type": "array", "items": {"$ref": "#/components/schemas/RunSummary"}}, "next_cursor": {"type": ["string", "null"]}}},
      "Run": {"allOf": [{"$ref": "#/components/schemas/RunSummary"}, {"type": "object", "properties": {
        "input": {}, "output": {}, "reason": {"type": "string"}, "agent_info": {"type": "object"},
        "effects": {"type": "integer"}, "policy_denials": {"type": "integer"}, "pending_approvals": {"type": "integer"},
        "fresh": {"type": "boolean"}}}]},
      "Record": {"type": "object", "properties": {
        "run_id": {"type": "string"}, "seq": {"type": "integer"}, "kind": {"type": "string"}, "body": {"type": "object"},
        "prev_hash": {"type": "string"}, "hash": {"type": "string"}}},
      "Verification": {"type": "object", "properties": {
        "run_id": {"type": "string"}, "verified": {"type": "boolean"}, "records": {"type": "integer"}, "head": {"type": "string"},
        "fault": {"type": "object", "properties": {"seq": {"type": "integer"}, "reason": {"type": "string"}}}}},
      "Approval": {"type": "object", "properties": {
        "effect_key": {"type": "string"}, "tool": {"type": "string"}, "arguments": {}, "status": {"enum": ["pending", "approved", "rejected", "withdrawn"]},
        "reason": {"type": "string"}, "reviewer": {"type": "string"}, "requested_seq": {"type": "integer"}, "decided_seq": {"type": "integer"},
        "withdrawn_seq": {"type": "integer"}}},
      "Decision": {"type": "object", "required": ["decision"], "additionalProperties": false, "properties": {
        "decision": {"enum": ["approve", "reject"]}, "reason": {"type": "string", "maxLength": 4096}}},
      "Agent": {"type": "object", "properties": {
        "name": {"type": "string"}, "version": {"type": "string"}, "digest": {"type": "string"},
        "provides": {"type": "array", "items": {"type": "string"}}, "grants": {"type": "array", "items": {"type": "object"}}}},
      "Pin": {"type": "object", "properties": {
        "key": {"type": "string"}, "server": {"type": "string"}, "tool": {"type": "string"}, "status": {"enum": ["pinned", "changed"]},
        "pinned_digest": {"type": "string"}, "pending_digest": {"type": ["string", "null"]}}},
      "PinReview": {"allOf": [{"$ref": "#/components/schemas/Pin"}, {"type": "object", "properties": {
        "pinned_definition": {"type": ["object", "null"], "description": "null: pinned by an airlock that kept only digests"},
        "pending_definition": {"type": ["object", "null"]},
        "diff": {"type": ["string", "null"], "description": "What changed, field by field, as a line diff; null unless both definitions are kept"}}}]}
    }
  }
})json";

}  // namespace

boost::json::object rest_api::openapi() {
    static boost::json::object const document = boost::json::parse(openapi_text).as_object();
    return document;
}

}  // namespace airlock::service
