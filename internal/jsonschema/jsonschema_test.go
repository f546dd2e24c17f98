package jsonschema

import (
	"errors"
	"strings"
	"testing"
	"time"
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
		// $ref to anchors and to the URIs the document's $ids give, never
		// another document's.
		{"$anchor", `{"$defs":{"a":{"$anchor":"pos","minimum":1}},"properties":{"n":{"$ref":"#pos"}}}`, `{"n":0}`, "n: want at least 1"},
		{"$id relative to the root's", `{"$id":"https://example.com/s/root.json","$defs":{"a":{"$id":"int.json","type":"integer"}},"$ref":"int.json"}`, `1.5`, "want integer"},
		{"$id absolute", `{"$id":"https://example.com/s/root.json","$defs":{"a":{"$id":"https://example.com/t/int.json","type":"integer"}},"$ref":"/t/int.json"}`, `2`, ""},
		{"$id without a root $id", `{"$defs":{"a":{"$id":"node.json","$defs":{"s":{"type":"string"}},"$ref":"#/$defs/s"}},"items":{"$ref":"node.json"}}`, `["a",1]`, "[1]: want string"},
		{"anchor inside a resource", `{"$id":"https://example.com/r","$defs":{"a":{"$id":"nested","$defs":{"b":{"$anchor":"x","type":"null"}}}},"$ref":"nested#x"}`, `0`, "want null"},
		{"$id inside an enum names nothing", `{"$defs":{"a":{"enum":[{"$id":"e.json"}]},"e":{"$id":"e.json","type":"string"}},"$ref":"e.json"}`, `"s"`, ""},
		{"a relative $id named like a file", `{"$defs":{"a":{"$id":"schema.json"},"s":{"type":"string"}},"$ref":"#/$defs/s"}`, `1`, "want string"},
		{"$dynamicAnchor is an anchor too", `{"$defs":{"a":{"$dynamicAnchor":"d","type":"string"}},"$ref":"#d"}`, `1`, "want string"},
		// dependentSchemas
		{"dependentSchemas", `{"dependentSchemas":{"card":{"required":["cvv"]}}}`, `{"card":1}`, `missing required property "cvv"`},
		{"dependentSchemas when absent", `{"dependentSchemas":{"card":{"required":["cvv"]}}}`, `{"cash":1}`, ""},
		{"dependentSchemas false", `{"dependentSchemas":{"a":false}}`, `{"a":1}`, "no value is allowed"},
		{"dependentSchemas ignores non-objects", `{"dependentSchemas":{"a":false}}`, `["a"]`, ""},
		// unevaluatedProperties sees the properties the schema's keywords
		// and its passing in-place subschemas evaluated.
		{"unevaluatedProperties false", `{"unevaluatedProperties":false}`, `{"a":1}`, `unexpected property "a"`},
		{"unevaluatedProperties beside properties", `{"properties":{"a":{}},"unevaluatedProperties":false}`, `{"a":1}`, ""},
		{"unevaluatedProperties schema", `{"properties":{"a":{}},"unevaluatedProperties":{"type":"string"}}`, `{"a":1,"b":2}`, "b: want string"},
		{"unevaluatedProperties beside patternProperties", `{"patternProperties":{"^x":{}},"unevaluatedProperties":false}`, `{"xa":1,"y":1}`, `unexpected property "y"`},
		{"unevaluatedProperties after additionalProperties", `{"additionalProperties":true,"unevaluatedProperties":false}`, `{"a":1}`, ""},
		{"unevaluatedProperties sees allOf", `{"allOf":[{"properties":{"a":{}}},{"properties":{"b":{}}}],"unevaluatedProperties":false}`, `{"a":1,"b":2}`, ""},
		{"unevaluatedProperties through allOf refuses", `{"allOf":[{"properties":{"a":{}}}],"unevaluatedProperties":false}`, `{"a":1,"c":3}`, `unexpected property "c"`},
		{"unevaluatedProperties sees each passing anyOf branch", `{"anyOf":[{"properties":{"a":{"type":"integer"}}},{"properties":{"b":{"type":"integer"}}}],"unevaluatedProperties":false}`, `{"a":1,"b":2}`, ""},
		{"unevaluatedProperties ignores failing anyOf branches", `{"anyOf":[{"properties":{"a":{"type":"integer"}}},{"properties":{"b":{"type":"integer"}}}],"unevaluatedProperties":false}`, `{"a":1,"b":"x"}`, `unexpected property "b"`},
		{"unevaluatedProperties with oneOf", `{"oneOf":[{"properties":{"a":{}},"required":["a"]},{"properties":{"b":{}},"required":["b"]}],"unevaluatedProperties":false}`, `{"b":1}`, ""},
		{"unevaluatedProperties with oneOf refuses", `{"oneOf":[{"properties":{"a":{}},"required":["a"]},{"properties":{"b":{}},"required":["b"]}],"unevaluatedProperties":false}`, `{"b":1,"a2":1}`, `unexpected property "a2"`},
		{"unevaluatedProperties with if then", `{"if":{"properties":{"kind":{"const":"a"}},"required":["kind"]},"then":{"properties":{"a":{}}},"else":{"properties":{"b":{}}},"unevaluatedProperties":false}`, `{"kind":"a","a":1}`, ""},
		{"unevaluatedProperties with if else", `{"if":{"properties":{"kind":{"const":"a"}},"required":["kind"]},"then":{"properties":{"a":{}}},"else":{"properties":{"b":{}}},"unevaluatedProperties":false}`, `{"kind":"b","b":1}`, `unexpected property "kind"`},
		{"unevaluatedProperties with a failing if", `{"if":{"properties":{"kind":{"const":"a"}},"required":["kind"]},"else":{"properties":{"b":{}}},"unevaluatedProperties":false}`, `{"b":1}`, ""},
		{"unevaluatedProperties ignores not", `{"not":{"not":{"properties":{"a":{}}}},"unevaluatedProperties":false}`, `{"a":1}`, `unexpected property "a"`},
		{"unevaluatedProperties sees $ref", `{"$defs":{"base":{"properties":{"id":{}}}},"$ref":"#/$defs/base","properties":{"name":{}},"unevaluatedProperties":false}`, `{"id":1,"name":"n"}`, ""},
		{"unevaluatedProperties sees $ref and refuses", `{"$defs":{"base":{"properties":{"id":{}}}},"$ref":"#/$defs/base","properties":{"name":{}},"unevaluatedProperties":false}`, `{"id":1,"x":0}`, `unexpected property "x"`},
		{"$ref's target does not see its siblings", `{"$defs":{"closed":{"unevaluatedProperties":false}},"$ref":"#/$defs/closed","properties":{"a":{}}}`, `{"a":1}`, `unexpected property "a"`},
		{"unevaluatedProperties sees dependentSchemas", `{"dependentSchemas":{"a":{"properties":{"b":{}}}},"properties":{"a":{}},"unevaluatedProperties":false}`, `{"a":1,"b":2}`, ""},
		{"unevaluatedProperties: dependentSchemas that do not apply", `{"dependentSchemas":{"a":{"properties":{"b":{}}}},"unevaluatedProperties":false}`, `{"b":2}`, `unexpected property "b"`},
		{"unevaluatedProperties cannot see cousins", `{"allOf":[{"properties":{"a":{}}},{"unevaluatedProperties":false}]}`, `{"a":1}`, `unexpected property "a"`},
		{"nested unevaluatedProperties, inner true", `{"allOf":[{"unevaluatedProperties":true}],"unevaluatedProperties":false}`, `{"a":1}`, ""},
		{"nested unevaluatedProperties, inner false", `{"properties":{"a":{}},"allOf":[{"unevaluatedProperties":false}],"unevaluatedProperties":true}`, `{"a":1}`, `unexpected property "a"`},
		{"unevaluatedProperties counts where it is", `{"properties":{"o":{"properties":{"a":{}}}},"unevaluatedProperties":false}`, `{"o":{"a":1},"a":1}`, `unexpected property "a"`},
		{"unevaluatedProperties inside a property", `{"properties":{"o":{"properties":{"a":{}},"unevaluatedProperties":false}}}`, `{"o":{"a":1,"b":2}}`, `o: unexpected property "b"`},
		{"unevaluatedProperties with a recursive $ref", `{"properties":{"x":{"$ref":"#"}},"unevaluatedProperties":false}`, `{"x":{"x":{"y":1}}}`, `x.x: unexpected property "y"`},
		{"unevaluatedProperties ignores non-objects", `{"unevaluatedProperties":false}`, `[1]`, ""},
		// unevaluatedItems likewise, with prefixItems, items and contains.
		{"unevaluatedItems false", `{"unevaluatedItems":false}`, `[1]`, "unexpected item 0"},
		{"unevaluatedItems after prefixItems", `{"prefixItems":[{"type":"integer"}],"unevaluatedItems":false}`, `[1,2]`, "unexpected item 1"},
		{"unevaluatedItems after items", `{"items":{"type":"integer"},"unevaluatedItems":false}`, `[1,2]`, ""},
		{"unevaluatedItems schema", `{"prefixItems":[{}],"unevaluatedItems":{"type":"string"}}`, `[1,"a",2]`, "[2]: want string"},
		{"unevaluatedItems sees allOf", `{"prefixItems":[{}],"allOf":[{"prefixItems":[{},{}]}],"unevaluatedItems":false}`, `[1,2]`, ""},
		{"unevaluatedItems sees contains", `{"contains":{"type":"string"},"unevaluatedItems":false}`, `["a","b"]`, ""},
		{"unevaluatedItems sees contains and refuses", `{"contains":{"type":"string"},"unevaluatedItems":false}`, `["a",1]`, "unexpected item 1"},
		{"unevaluatedItems with anyOf where one branch passes", `{"anyOf":[{"prefixItems":[{"const":1},{"const":2}]},{"prefixItems":[{"const":1}]}],"unevaluatedItems":false}`, `[1,3]`, "unexpected item 1"},
		{"unevaluatedItems with $ref", `{"$defs":{"pair":{"prefixItems":[{},{}]}},"$ref":"#/$defs/pair","unevaluatedItems":false}`, `[1,2,3]`, "unexpected item 2"},
		{"unevaluatedItems in nested arrays", `{"prefixItems":[{"prefixItems":[{}],"unevaluatedItems":false}],"unevaluatedItems":false}`, `[[1,2]]`, "[0]: unexpected item 1"},
		// draft-07, -06 and -04, by $schema
		{"draft-07 array items", `{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"integer"},{"type":"string"}]}`, `[1,2]`, "[1]: want string"},
		{"draft-07 additionalItems", `{"$schema":"http://json-schema.org/draft-07/schema#","items":[{}],"additionalItems":false}`, `[1,2]`, "[1]: no value is allowed"},
		{"draft-07 additionalItems beside one items schema", `{"$schema":"http://json-schema.org/draft-07/schema#","items":{},"additionalItems":false}`, `[1,2]`, ""},
		{"draft-07 items as {}", `{"$schema":"http://json-schema.org/draft-07/schema","items":{}}`, `[1]`, ""},
		{"draft-07 dependencies of names", `{"$schema":"http://json-schema.org/draft-07/schema#","dependencies":{"a":["b"]}}`, `{"a":1}`, `property "a" needs property "b"`},
		{"draft-07 dependencies of a schema", `{"$schema":"http://json-schema.org/draft-07/schema#","dependencies":{"a":{"required":["c"]}}}`, `{"a":1}`, `missing required property "c"`},
		{"draft-07 definitions", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s"}}}`, `{"a":1}`, "a: want string"},
		{"draft-07 $ref ignores its siblings", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"type":"array"}},"properties":{"x":{"$ref":"#/definitions/a","maxItems":1}}}`, `{"x":[1,2]}`, ""},
		{"draft-07 $id anchor", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"$id":"#int","type":"integer"}},"$ref":"#int"}`, `"x"`, "want integer"},
		{"draft-07 ignores 2020-12 keywords", `{"$schema":"http://json-schema.org/draft-07/schema#","prefixItems":[false],"dependentRequired":{"a":["b"]},"unevaluatedProperties":false}`, `{"a":[1]}`, ""},
		{"draft-06 const", `{"$schema":"http://json-schema.org/draft-06/schema#","const":1}`, `2`, "want 1"},
		{"draft-04 ignores const", `{"$schema":"http://json-schema.org/draft-04/schema#","const":1}`, `2`, ""},
		{"draft-04 exclusiveMaximum", `{"$schema":"http://json-schema.org/draft-04/schema#","maximum":3,"exclusiveMaximum":true}`, `3`, "want less than 3"},
		{"draft-04 exclusiveMinimum false", `{"$schema":"http://json-schema.org/draft-04/schema#","minimum":3,"exclusiveMinimum":false}`, `3`, ""},
		{"draft-04 id", `{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://example.com/r","definitions":{"a":{"id":"a.json","type":"null"}},"$ref":"a.json"}`, `1`, "want null"},
		{"2020-12 ignores dependencies", `{"dependencies":{"a":["b"]}}`, `{"a":1}`, ""},
		{"2020-12 ignores additionalItems", `{"prefixItems":[{}],"additionalItems":false}`, `[1,2]`, ""},
		{"an embedded draft-07 resource", `{"$defs":{"old":{"$schema":"http://json-schema.org/draft-07/schema#","$id":"old.json","items":[{"type":"string"}]}},"$ref":"old.json"}`, `[1]`, "[0]: want string"},
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
		{`{"$ref":"https://json-schema.org/draft/2020-12/schema"}`, "not to another document"},
		{`{"$id":"https://example.com/a","$ref":"b#/x"}`, "not to another document"},
		{`{"$ref":"#nowhere"}`, `no $anchor "nowhere"`},
		{`{"$defs":{"a":{"$anchor":"x"},"b":{"$anchor":"x"}},"$ref":"#x"}`, "names both #/$defs/a and #/$defs/b"},
		{`{"$defs":{"a":{"$id":"s.json"},"b":{"$id":"s.json"}},"$ref":"s.json"}`, "names both"},
		{`{"items":[{}]}`, "#/items: want an object or a boolean"},
		{`{"dependentSchemas":{"a":1}}`, "#/dependentSchemas/a: want an object or a boolean"},
		{`{"unevaluatedProperties":[]}`, "#/unevaluatedProperties: want an object or a boolean"},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","dependencies":{"a":[1]}}`, "#/dependencies: want an object of arrays of strings and schemas"},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[]}`, "#/items: want a non-empty array of schemas"},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","exclusiveMaximum":3}`, "#/exclusiveMaximum: want a boolean (draft-04)"},
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
	for _, tc := range []struct{ name, schema string }{
		// Each level tries both branches, the first failing only after
		// its items were checked: 2^depth checks.
		{"anyOf", `{"$defs":{"n":{"anyOf":[{"items":{"$ref":"#/$defs/n"},"allOf":[false]},{"items":{"$ref":"#/$defs/n"}}]}},"$ref":"#/$defs/n"}`},
		// unevaluatedItems needs every anyOf branch's annotations, so
		// both branches run even though the first passes.
		{"anyOf collecting annotations", `{"$defs":{"n":{"anyOf":[{"items":{"$ref":"#/$defs/n"}},{"items":{"$ref":"#/$defs/n"}}],"unevaluatedItems":false}},"$ref":"#/$defs/n"}`},
	} {
		s, err := Compile([]byte(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		value := strings.Repeat("[", 40) + strings.Repeat("]", 40)
		if err := s.Validate([]byte(value)); !errors.Is(err, ErrTooComplex) {
			t.Errorf("%s: got %v, want ErrTooComplex", tc.name, err)
		}
	}
	// Without unevaluatedItems the first branch that passes ends anyOf.
	s, err := Compile([]byte(`{"$defs":{"n":{"anyOf":[{"items":{"$ref":"#/$defs/n"}},{"items":{"$ref":"#/$defs/n"}}]}},"$ref":"#/$defs/n"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate([]byte(strings.Repeat("[", 40) + strings.Repeat("]", 40))); err != nil {
		t.Errorf("short-circuiting anyOf: %v", err)
	}
}

// A pattern's program is bounded before it is built: a 14 KiB pattern of
// a{1000} compiled to 2 million instructions (a second of CPU, 100 MiB kept
// by each cached schema).
func TestPatternTooLarge(t *testing.T) {
	big := strings.Repeat("a{1000}", 40) // 40,000 instructions
	part := strings.Repeat("a{1000}", 30)
	for _, tc := range []struct{ name, schema string }{
		{"pattern", `{"pattern":"` + big + `"}`},
		{"nested", `{"properties":{"a":{"pattern":"(` + strings.Repeat("abcdefghij", 5) + `){1000}"}}}`},
		{"patternProperties", `{"patternProperties":{"` + big + `":{}}}`},
		{"Unicode classes", `{"pattern":"` + strings.Repeat(`\\pL`, maxPatternClasses+1) + `"}`},
		{"all the patterns", `{"properties":{"a":{"pattern":"` + part + `"},"b":{"pattern":"` + part + `"},` +
			`"c":{"pattern":"` + part + `"},"d":{"pattern":"` + part + `"},"e":{"pattern":"` + part + `"}}}`},
	} {
		_, err := Compile([]byte(tc.schema))
		if err == nil || !strings.Contains(err.Error(), "pattern too large") {
			t.Errorf("%s: got %.200v, want pattern too large", tc.name, err)
		}
	}
	for _, p := range []string{part, ".{1,1000}", `[\\pL\\pN]+`, "^[a-z0-9_-]{1,64}$"} {
		if _, err := Compile([]byte(`{"pattern":"` + p + `"}`)); err != nil {
			t.Errorf("%.40s: %v", p, err)
		}
	}
}

// Matching a pattern cannot be interrupted, and takes time in its program's
// size times the string's length: past maxPatternWork the value is refused,
// before the match ("[^x]{1000}y" took 8.7 s on 1 MB). A small pattern
// checks megabytes.
func TestPatternWork(t *testing.T) {
	long := `"` + strings.Repeat("a", 1<<20) + `"`
	for _, tc := range []struct {
		name, schema, value string
		first               bool // refused before any match: at once
	}{
		{"pattern", `{"pattern":"[^x]{1000}y"}`, long, true},
		{"patternProperties", `{"patternProperties":{"[^x]{1000}y":{}}}`, `{` + long + `:1}`, true},
		{"many strings", `{"items":{"pattern":"[^x]{1000}y"}}`, `[` + strings.Repeat(`"`+strings.Repeat("a", 1<<10)+`y",`, 100) + `""]`, false},
	} {
		s, err := Compile([]byte(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := s.Validate([]byte(tc.value)); !errors.Is(err, ErrTooComplex) {
			t.Errorf("%s: got %.200v, want ErrTooComplex", tc.name, err)
		}
		if d := time.Since(start); tc.first && d > time.Second {
			t.Errorf("%s: refused after %v", tc.name, d)
		}
	}
	s, err := Compile([]byte(`{"pattern":"^a+$"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate([]byte(long)); err != nil {
		t.Errorf("a small pattern on 1 MiB: %v", err)
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

// IgnoredKeywords lists what reads like a check but is not one, where it
// is; annotations and other unknown keywords are not listed.
func TestIgnoredKeywords(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		want         []string // "pointer: a substring of Why"
	}{
		{"none", `{"type":"object","properties":{"a":{"type":"string","format":"email","title":"A","x-order":1}},"required":["a"]}`, nil},
		{"misspellings", `{"properties":{"n":{"minimun":1,"maxLenght":3}},"require":["n"]}`,
			[]string{"/require: required?", "/properties/n/maxLenght: maxLength?", "/properties/n/minimun: minimum?"}},
		{"case", `{"additionalproperties":false,"minlength":1}`,
			[]string{"/additionalproperties: additionalProperties?", "/minlength: minLength?"}},
		{"ref without $", `{"properties":{"a":{"ref":"#/$defs/a"}}}`, []string{"/properties/a/ref: $ref?"}},
		{"short names are not compared", `{"id":"x","note":"n","iff":1}`, nil},
		{"property names are no keywords", `{"properties":{"require":{},"minimun":{}}}`, nil},
		{"inside enum and const", `{"enum":[{"minimun":1}],"const":{"require":1}}`, nil},
		{"$dynamicRef", `{"$defs":{"a":{"$dynamicRef":"#meta"}}}`, []string{"/$defs/a/$dynamicRef: not followed"}},
		{"nullable", `{"type":"string","nullable":true}`, []string{"/nullable: OpenAPI"}},
		{"draft-07 keyword under 2020-12", `{"dependencies":{"a":["b"]},"additionalItems":false}`,
			[]string{"/additionalItems: a draft-04 to draft-07 keyword, not read under 2020-12", "/dependencies: dependentRequired or dependentSchemas"}},
		{"2020-12 keyword under draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","unevaluatedProperties":false,"items":[{"prefixItems":[]}]}`,
			[]string{"/unevaluatedProperties: not read under draft-07", "/items/0/prefixItems: a 2020-12 keyword, not read under draft-07"}},
		{"draft-04 const", `{"$schema":"http://json-schema.org/draft-04/schema#","const":1}`, []string{"/const: draft-06 and later keyword, not read under draft-04"}},
		{"draft-07 siblings of $ref", `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"a":{"$ref":"#/definitions/s","maxLength":3,"description":"d"}},"definitions":{"s":{}}}`,
			[]string{"/properties/a/maxLength: draft-07 ignores the siblings of $ref"}},
		{"2020-12 $ref siblings are read", `{"properties":{"a":{"$ref":"#/$defs/s","maxLength":3}},"$defs":{"s":{}}}`, nil},
		{"escaped pointers", `{"properties":{"a/b":{"minimun":1}}}`, []string{"/properties/a~1b/minimun: minimum?"}},
		{"a schema that does not compile", `{"items":[{"minimun":1}],"$ref":"elsewhere.json"}`, []string{"/items/0/minimun: minimum?"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := IgnoredKeywords([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %d: %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				pointer, why, _ := strings.Cut(w, ": ")
				if got[i].Pointer != pointer || !strings.Contains(got[i].Why, why) || !strings.HasSuffix(pointer, "/"+got[i].Keyword) {
					t.Errorf("[%d] got %+v, want %q", i, got[i], w)
				}
			}
		})
	}
	if _, err := IgnoredKeywords([]byte(`{`)); err == nil {
		t.Error("JSON that does not parse: no error")
	}
}

func TestOneEdit(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"required", "require", true}, {"minimum", "minimun", true}, {"maxlength", "maxlenght", true},
		{"items", "itemss", true}, {"items", "xitems", true}, {"type", "tpye", true}, {"type", "typ", true},
		{"minimum", "maximum", false}, {"ab", "ba", true}, {"abc", "cba", false}, {"abcd", "abdc", true},
		{"const", "cosnt", true}, {"enum", "en", false}, {"pattern", "patterns", true}, {"abc", "abc", false},
	} {
		if got := oneEdit(tc.a, tc.b); got != tc.want {
			t.Errorf("oneEdit(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
