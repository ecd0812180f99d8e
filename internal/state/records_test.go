package state

import (
	"reflect"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
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

// Every field of the api types a record stands for goes into the record
// and comes back: a field added to the wire and not to the store fails
// here (or, for a flat record, does not compile).
func TestRecordsKeepEveryField(t *testing.T) {
	check := func(name string, want, got any) {
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: the record lost a field:\nwant %+v\ngot  %+v", name, want, got)
		}
	}
	e := filled[api.Execution](t)
	check("execution", e, toExecution(e).wire())
	s := filled[api.Session](t)
	check("session", s, toSession(s).wire())
	p := filled[api.Project](t)
	check("project", p, toProject(p).wire())
	a := filled[api.Approval](t)
	check("approval", a, toApproval(a).wire())
	n := filled[api.Snapshot](t)
	check("snapshot", n, api.Snapshot(snapshotRecord(n)))
	check("an execution without its optional parts", api.Execution{}, toExecution(api.Execution{}).wire())
}
