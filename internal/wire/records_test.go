package wire

import (
	"reflect"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/state"
)

// fill sets every field of v, however deep, to a value that is not its
// zero: what a record's mapping leaves out then shows.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		v.SetMapIndex(k, e)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			fill(v.Field(i))
		}
	}
}

func filled[T any](t *testing.T) T {
	var x T
	fill(reflect.ValueOf(&x).Elem())
	return x
}

// Every field of a record reaches the wire, and every field of the wire's
// type comes from the record: a field added to one and not to the other
// fails here (or, for a flat record, does not compile). Filled with the
// same values, the record mapped must be the wire's type filled.
func TestRecordsKeepEveryField(t *testing.T) {
	check := func(name string, want, got any) {
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: the mapping lost a field:\nwant %+v\ngot  %+v", name, want, got)
		}
	}
	check("execution", filled[api.Execution](t), Execution(filled[state.Execution](t)))
	session := filled[api.Session](t)
	session.Network.Proxy.Password = "" // never shown back
	check("session", session, Session(filled[state.Session](t)))
	check("project", filled[api.Project](t), Project(filled[state.Project](t)))
	check("approval", filled[api.Approval](t), Approval(filled[state.Approval](t)))
	check("snapshot", filled[api.Snapshot](t), Snapshot(filled[state.Snapshot](t)))
	check("an execution without its optional parts", api.Execution{}, Execution(state.Execution{}))
}
