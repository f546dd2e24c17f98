package jsonschema

import (
	"errors"
	"testing"
)

// FuzzValidate: no schema and value make Compile, Validate or
// IgnoredKeywords panic or run past maxSteps, and a value either passes or
// gets an error saying where.
func FuzzValidate(f *testing.F) {
	for _, seed := range [][2]string{
		{`{"type":"object","properties":{"a":{"type":"integer","minimum":1}},"required":["a"]}`, `{"a":2}`},
		{`{"anyOf":[{"items":{"$ref":"#"}},{"type":"string","pattern":"^x"}]}`, `[["x"],[[]]]`},
		{`{"$defs":{"p":{"oneOf":[{"const":1},{"enum":[1,2]}]}},"additionalProperties":{"$ref":"#/$defs/p"}}`, `{"k":1,"j":2}`},
		{`{"prefixItems":[true,false],"uniqueItems":true,"multipleOf":0.5}`, `[1.5,1.50]`},
		{`{"if":{"type":"string"},"then":{"maxLength":1},"else":{"not":{}}}`, `"ab"`},
		{`false`, `null`},
		{`{"contains":{"multipleOf":0.01},"minContains":2,"maxContains":3,"dependentRequired":{"a":["b"]}}`, `[1e-2,1.5e1,12345678901.001]`},
		{`{"$defs":{"a%b":{"maximum":9007199254740992}},"$ref":"#/$defs/a%25b"}`, `9007199254740993`},
		{`{"anyOf":[{"properties":{"a":{}}},{"prefixItems":[{}]}],"contains":{"type":"null"},"unevaluatedProperties":false,"unevaluatedItems":{"$ref":"#x"},"$defs":{"x":{"$anchor":"x","type":"string"}}}`, `[1,null,"s"]`},
		{`{"$id":"https://e.com/a","$defs":{"b":{"$id":"b","dependentSchemas":{"k":{"if":{"required":["k"]},"then":{"properties":{"j":true}}}},"unevaluatedProperties":false}},"$ref":"b"}`, `{"k":1,"j":2}`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"$id":"#i"}],"additionalItems":{"$ref":"#i"},"dependencies":{"a":["b"],"c":{"not":{}}}}`, `[{"a":1,"b":2}]`},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://x/y","maximum":1,"exclusiveMaximum":true}`, `1`},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, schema, value string) {
		if _, err := IgnoredKeywords([]byte(schema)); err != nil {
			return
		}
		s, err := Compile([]byte(schema))
		if err != nil {
			return
		}
		err = s.Validate([]byte(value))
		var ve *ValidationError
		if err != nil && !errors.As(err, &ve) && !errors.Is(err, ErrTooComplex) && len(err.Error()) == 0 {
			t.Fatalf("an error without a message: %#v", err)
		}
	})
}
