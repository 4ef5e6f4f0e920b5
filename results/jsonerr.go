package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// JSONError says in plain words what is wrong with the JSON file named
// file, err being what encoding/json said of it: the field and what it
// holds instead of Go's "cannot unmarshal string into Go struct field
// Run.schema of type int", the byte offset of a syntax error.
func JSONError(file string, err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "the top level"
		}
		return fmt.Errorf("%s: %s holds a JSON %s, where kci wants %s", file, field, te.Value, jsonKind(te.Type))
	case errors.As(err, &se):
		return fmt.Errorf("%s: not valid JSON at byte %d: %v", file, se.Offset, se)
	}
	return fmt.Errorf("%s: %w", file, err)
}

// jsonKind names what a Go type is in JSON's words.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another type"
}
