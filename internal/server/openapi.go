package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/daemon"
)

// The OpenAPI 3.1 document of the API, made from the route table and the
// api package's types (JSON Schema 2020-12, which OpenAPI 3.1 uses as is).

var (
	openAPIOnce sync.Once
	openAPIJSON []byte
)

func (h *handler) openAPI(w http.ResponseWriter, r *http.Request) {
	openAPIOnce.Do(func() {
		var err error
		if openAPIJSON, err = json.MarshalIndent(OpenAPI(), "", "  "); err != nil {
			panic(err) // the document is made of plain maps and schemas
		}
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIJSON)
}

func (h *handler) metrics(w http.ResponseWriter, r *http.Request) {
	h.d.Metrics.Handler().ServeHTTP(w, r)
}

// schemaTypes are the types whose JSON differs from their Go kind.
var schemaTypes = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[api.Duration](): {Types: []string{"string", "number"},
		Description: `a duration: a string like "500ms", "2s", "1m" (how it is written) or a number of seconds`},
	reflect.TypeFor[api.ByteSize](): {Types: []string{"integer", "string"},
		Description: `a size: a number of bytes (how it is written) or a string like "128MiB", "1g"`},
	reflect.TypeFor[time.Time](): {Type: "string", Format: "date-time"},
}

var pathParam = regexp.MustCompile(`\{(\w+)(?:\.\.\.)?\}`)

// OpenAPI returns the document.
func OpenAPI() map[string]any {
	schemas := map[string]any{}
	ref := func(t reflect.Type) map[string]any {
		name := t.Name()
		if t.Kind() == reflect.Map {
			name = t.Elem().Name() + "Map"
		}
		if _, ok := schemas[name]; !ok {
			s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: schemaTypes})
			if err != nil {
				panic(fmt.Sprintf("schema of %s: %v", t, err))
			}
			schemas[name] = s
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	media := func(c content, events reflect.Type) map[string]any {
		m := map[string]any{}
		if c.json != nil {
			m["application/json"] = map[string]any{"schema": ref(c.json)}
		}
		for _, t := range c.media {
			m[t] = map[string]any{}
		}
		if events != nil {
			m[api.ContentTypeNDJSON] = map[string]any{"schema": ref(events)}
		}
		return m
	}
	errResponse := map[string]any{"description": "the stable error body: a code, a message that says what to do, and for policy_denied the findings",
		"content": media(jsonOf[api.ErrorBody](), nil)}

	paths := map[string]map[string]any{}
	for _, rt := range routes() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
			desc := map[string]string{"id": "the session's id", "path": "a path relative to /workspace; may hold slashes"}[m[1]]
			if strings.HasPrefix(path, "/v1/projects/") {
				desc = map[string]string{"id": "the project's id or name", "name": "the file's name in the project"}[m[1]]
			}
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "description": desc, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range rt.query {
			params = append(params, map[string]any{"name": q.name, "in": "query", "description": q.description, "schema": map[string]any{"type": q.typ}})
		}
		ok := map[string]any{"description": http.StatusText(rt.status)}
		switch {
		case rt.events != nil && rt.result.json == nil:
			ok["description"] = "a stream of events: one per line (application/x-ndjson), or with Accept: text/event-stream one per server-sent event"
		case rt.events != nil:
			ok["description"] = "the result; with Accept: application/x-ndjson, one event per line (output or progress), the last a result or an error event"
		}
		if rt.result.json != nil || rt.result.media != nil {
			ok["content"] = media(rt.result, rt.events)
		}
		op := map[string]any{"operationId": rt.id, "summary": rt.summary,
			"responses": map[string]any{fmt.Sprint(rt.status): ok, "default": errResponse}}
		if params != nil {
			op["parameters"] = params
		}
		if rt.request.json != nil || rt.request.media != nil {
			op["requestBody"] = map[string]any{"required": true, "content": media(rt.request, nil)}
		}
		key := pathParam.ReplaceAllString(path, "{$1}")
		if paths[key] == nil {
			paths[key] = map[string]any{}
		}
		paths[key][strings.ToLower(method)] = op
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "sandboxd", "version": daemon.Version,
			"description": "Runs untrusted code in Docker containers. Served over a Unix socket (default /run/sandboxd/sandboxd.sock): curl --unix-socket /run/sandboxd/sandboxd.sock http://sandboxd/v1/health"},
		"servers":           []any{map[string]any{"url": "http://sandboxd", "description": "any host name; the transport is the Unix socket"}},
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"paths":             paths,
		"components":        map[string]any{"schemas": schemas},
	}
}
