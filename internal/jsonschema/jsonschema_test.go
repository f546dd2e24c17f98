package jsonschema

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name, schema, value string
		want                string // "" valid; else a substring of the error
	}{
		// type
		{"object", `{"type":"object"}`, `{}`, ""},
		{"object refuses an array", `{"type":"object"}`, `[]`, "want object, got array"},
		{"integer", `{"type":"integer"}`, `3`, ""},
		{"integer with a zero fraction", `{"type":"integer"}`, `3.0`, ""},
		{"integer refuses a fraction", `{"type":"integer"}`, `3.5`, "want integer, got number"},
		{"number takes an integer", `{"type":"number"}`, `3`, ""},
		{"a string is no number", `{"type":"number"}`, `"3"`, "want number, got string"},
		{"type list", `{"type":["string","null"]}`, `null`, ""},
		{"type list refuses", `{"type":["string","null"]}`, `1`, "want string or null, got integer"},
		{"boolean", `{"type":"boolean"}`, `false`, ""},
		{"boolean schema true", `true`, `[1]`, ""},
		{"boolean schema false", `false`, `1`, "no value is allowed"},
		{"no keywords", `{}`, `{"a":[1,{"b":null}]}`, ""},
		{"annotations only", `{"title":"t","format":"email","description":"d","default":1}`, `"not an email"`, ""},
		// enum and const
		{"enum", `{"enum":["a","b",1]}`, `1.0`, ""},
		{"enum refuses", `{"enum":["a","b"]}`, `"c"`, `want one of ["a","b"]`},
		{"enum of objects", `{"enum":[{"x":1,"y":[2]}]}`, `{"y":[2],"x":1}`, ""},
		{"const", `{"const":{"k":true}}`, `{"k":false}`, `want {"k":true}`},
		// numbers
		{"minimum", `{"minimum":1}`, `0.5`, "want at least 1, got 0.5"},
		{"maximum", `{"maximum":10}`, `10`, ""},
		{"exclusiveMaximum", `{"exclusiveMaximum":10}`, `10`, "want less than 10"},
		{"exclusiveMinimum", `{"exclusiveMinimum":0}`, `0`, "want more than 0"},
		{"multipleOf", `{"multipleOf":0.1}`, `0.3`, ""},
		{"multipleOf refuses", `{"multipleOf":2}`, `7`, "want a multiple of 2"},
		{"bounds ignore other types", `{"minimum":5,"minLength":3}`, `"abc"`, ""},
		// Numbers compare as the decimals they are written as, not as the
		// float64s nearest them.
		{"multipleOf past 1e9", `{"multipleOf":2}`, `10000000001`, "want a multiple of 2"},
		{"multipleOf of decimals", `{"multipleOf":0.01}`, `12345678901.001`, "want a multiple of 0.01"},
		{"multipleOf past float64's quotients", `{"multipleOf":0.5}`, `1e308`, ""},
		{"maximum past 2^53", `{"maximum":9007199254740992}`, `9007199254740993`, "want at most 9007199254740992"},
		{"exclusiveMaximum past 2^53", `{"exclusiveMaximum":9007199254740993}`, `9007199254740992`, ""},
		{"integer with digits past float64's", `{"type":"integer"}`, `1.0000000000000001`, "want integer, got number"},
		{"integer in exponent form", `{"type":"integer"}`, `1.5e1`, ""},
		{"enum past 2^53", `{"enum":[9007199254740992]}`, `9007199254740993`, "want one of"},
		{"const in another notation", `{"const":100}`, `1e2`, ""},
		// strings
		{"minLength counts characters", `{"minLength":3}`, `"héé"`, ""},
		{"maxLength", `{"maxLength":2}`, `"abc"`, "want at most 2 characters, got 3"},
		{"pattern", `{"pattern":"^[a-z]+$"}`, `"abc"`, ""},
		{"pattern refuses", `{"pattern":"^[a-z]+$"}`, `"ab1"`, "does not match the pattern"},
		{"pattern unanchored", `{"pattern":"b"}`, `"abc"`, ""},
		// arrays
		{"items", `{"type":"array","items":{"type":"string"}}`, `["a",2]`, "[1]: want string, got integer"},
		{"prefixItems", `{"prefixItems":[{"type":"integer"},{"type":"string"}],"items":false}`, `[1,"a"]`, ""},
		{"prefixItems then items false", `{"prefixItems":[{"type":"integer"}],"items":false}`, `[1,2]`, "[1]: no value is allowed"},
		{"minItems", `{"minItems":2}`, `[1]`, "want at least 2 items"},
		{"maxItems", `{"maxItems":1}`, `[1,2]`, "want at most 1 items"},
		{"uniqueItems", `{"uniqueItems":true}`, `[1,{"a":1},{"a":1.0}]`, "items 1 and 2 are equal"},
		{"uniqueItems passes", `{"uniqueItems":true}`, `[1,"1",[1]]`, ""},
		{"contains", `{"contains":{"type":"integer"}}`, `["a",1]`, ""},
		{"contains refuses", `{"contains":{"type":"integer"}}`, `["a","b"]`, "want an item matching contains"},
		{"contains refuses an empty array", `{"contains":true}`, `[]`, "want an item matching contains"},
		{"contains ignores non-arrays", `{"contains":false}`, `{"a":1}`, ""},
		{"minContains", `{"contains":{"const":1},"minContains":2}`, `[1,2,1]`, ""},
		{"minContains refuses", `{"contains":{"const":1},"minContains":2}`, `[1,2]`, "want at least 2 items matching contains, got 1"},
		{"minContains 0", `{"contains":false,"minContains":0}`, `[1]`, ""},
		{"maxContains refuses", `{"contains":{"const":1},"maxContains":1}`, `[1,1]`, "want at most 1 items matching contains, got 2"},
		{"maxContains with minContains 0", `{"contains":{"const":1},"minContains":0,"maxContains":1}`, `[]`, ""},
		{"minContains without contains", `{"minContains":3,"maxContains":0}`, `[1]`, ""},
		// objects
		{"required", `{"type":"object","required":["city"]}`, `{"town":"x"}`, `missing required property "city"`},
		{"properties", `{"properties":{"n":{"type":"integer"}}}`, `{"n":"5"}`, "n: want integer, got string"},
		{"nested path", `{"properties":{"a":{"items":{"properties":{"b c":{"type":"null"}}}}}}`, `{"a":[{},{"b c":1}]}`, `a[1]["b c"]: want null`},
		{"additionalProperties false", `{"properties":{"a":{}},"additionalProperties":false}`, `{"a":1,"b":2}`, `unexpected property "b"`},
		{"additionalProperties schema", `{"additionalProperties":{"type":"number"}}`, `{"x":1,"y":"2"}`, "y: want number"},
		{"patternProperties", `{"patternProperties":{"^x_":{"type":"string"}},"additionalProperties":false}`, `{"x_a":"s"}`, ""},
		{"patternProperties covers additional", `{"patternProperties":{"^x_":{"type":"string"}},"additionalProperties":false}`, `{"y":"s"}`, `unexpected property "y"`},
		{"propertyNames", `{"propertyNames":{"maxLength":3}}`, `{"long":1}`, "the property name is not allowed"},
		{"minProperties", `{"minProperties":1}`, `{}`, "want at least 1 properties"},
		{"dependentRequired", `{"dependentRequired":{"card":["cvv","expiry"]}}`, `{"card":"x","cvv":1,"expiry":2}`, ""},
		{"dependentRequired refuses", `{"dependentRequired":{"card":["cvv","expiry"]}}`, `{"card":"x","cvv":1}`, `property "card" needs property "expiry"`},
		{"dependentRequired when absent", `{"dependentRequired":{"card":["cvv"]}}`, `{"cvv":1}`, ""},
		{"dependentRequired as {}", `{"dependentRequired":{"card":{}}}`, `{"card":1}`, ""},
		// combinators
		{"allOf", `{"allOf":[{"type":"integer"},{"minimum":3}]}`, `2`, "want at least 3"},
		{"anyOf", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `4`, ""},
		{"anyOf refuses", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `true`, "matches none of the anyOf schemas"},
		{"oneOf", `{"oneOf":[{"type":"integer"},{"minimum":0}]}`, `-1`, ""},
		{"oneOf both", `{"oneOf":[{"type":"integer"},{"minimum":0}]}`, `1`, "matches 2 of the oneOf schemas"},
		{"not", `{"not":{"type":"null"}}`, `null`, "must not"},
		{"if then", `{"if":{"properties":{"kind":{"const":"a"}}},"then":{"required":["a"]},"else":{"required":["b"]}}`, `{"kind":"a"}`, `missing required property "a"`},
		{"if else", `{"if":{"properties":{"kind":{"const":"a"}}},"then":{"required":["a"]},"else":{"required":["b"]}}`, `{"kind":"z","b":1}`, ""},
		// Lua has one empty table, which luamcp's encoder writes {}.
		{"required as {}", `{"type":"object","required":{},"properties":[]}`, `{"a":1}`, ""},
		{"enum as {}", `{"enum":{}}`, `1`, "want one of []"},
		// $ref
		{"$defs", `{"$defs":{"pos":{"type":"integer","minimum":1}},"properties":{"n":{"$ref":"#/$defs/pos"}}}`, `{"n":0}`, "n: want at least 1"},
		{"definitions", `{"definitions":{"s":{"type":"string"}},"items":{"$ref":"#/definitions/s"}}`, `["a","b"]`, ""},
		{"recursive", `{"type":"object","properties":{"child":{"$ref":"#"},"v":{"type":"integer"}}}`, `{"child":{"child":{"v":"x"}}}`, "child.child.v: want integer"},
		{"pointer escapes", `{"$defs":{"a/b":{"type":"null"}},"$ref":"#/$defs/a~1b"}`, `null`, ""},
		// $ref is a URI: its fragment is percent-decoded before it is read as
		// a JSON pointer.
		{"pointer percent-encoded", `{"$defs":{"100%":{"type":"null"}},"$ref":"#/$defs/100%25"}`, `1`, "want null"},
		{"pointer with a quote", `{"$defs":{"say \"x\"":{"type":"null"}},"$ref":"#/$defs/say%20%22x%22"}`, `null`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.schema))
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			err = s.Validate([]byte(tc.value))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s against %s: %v", tc.value, tc.schema, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s against %s: got %v, want %q", tc.value, tc.schema, err, tc.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	deep := strings.Repeat(`{"items":`, 100) + `{}` + strings.Repeat(`}`, 100)
	for _, tc := range []struct{ schema, want string }{
		{`[]`, "want an object or a boolean"},
		{`{"type":"int"}`, `not "int"`},
		{`{"type":3}`, "a type name"},
		{`{"minimum":"1"}`, "#/minimum: want a number"},
		{`{"minLength":-1}`, "a non-negative integer"},
		{`{"multipleOf":0}`, "above 0"},
		{`{"pattern":"(?<=a)b"}`, "#/pattern"},
		{`{"properties":{"a":{"pattern":"("}}}`, "#/properties/a/pattern"},
		{`{"required":[1]}`, "an array of strings"},
		{`{"anyOf":[]}`, "a non-empty array"},
		{`{"$ref":"other.json"}`, "a reference within the schema"},
		{`{"$ref":"#/$defs/missing"}`, `no "$defs"`},
		{`{"$defs":{},"$ref":"#/$defs/missing"}`, `no "missing"`},
		{`{"$defs":{"100%":{}},"$ref":"#/$defs/100%"}`, "#/$ref: want a reference"},
		{`{"contains":1}`, "#/contains: want an object or a boolean"},
		{`{"minContains":1.5}`, "#/minContains: want a non-negative integer"},
		{`{"dependentRequired":{"a":[1]}}`, "#/dependentRequired: want an object of arrays of strings"},
		{`{"dependentRequired":["a"]}`, "#/dependentRequired: want an object of arrays of strings"},
		{`{"$ref":"#/$defs/x","$defs":{"x":{"type":"nope"}}}`, `not "nope"`},
		{deep, "nested deeper than"},
		{`{`, "schema:"},
	} {
		if _, err := Compile([]byte(tc.schema)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.60s: got %v, want %q", tc.schema, err, tc.want)
		}
	}
}

// A value that makes nested anyOf exponential is refused once the checker
// has done maxSteps of work, not checked for minutes.
func TestTooComplex(t *testing.T) {
	// Each level tries both branches, the first failing only after its
	// items were checked: 2^depth checks.
	s, err := Compile([]byte(`{"$defs":{"n":{"anyOf":[{"items":{"$ref":"#/$defs/n"},"allOf":[false]},{"items":{"$ref":"#/$defs/n"}}]}},"$ref":"#/$defs/n"}`))
	if err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("[", 40) + strings.Repeat("]", 40)
	if err := s.Validate([]byte(value)); !errors.Is(err, ErrTooComplex) {
		t.Errorf("got %v, want ErrTooComplex", err)
	}
}

func TestValidateBadJSON(t *testing.T) {
	s, err := Compile([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate([]byte(`{"a":`)); err == nil {
		t.Error("truncated JSON passed")
	}
}
