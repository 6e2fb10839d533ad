// Command celeval evaluates Flux Kustomization healthCheckExprs against Kubernetes objects
// the way kustomize-controller does, so the expressions the README gives are tested by the
// same CEL implementation (cel-go) with the same environment, not by a look-alike.
//
// Input (stdin): {"cases": [{"exprs": {"current": "...", "inProgress": "...", "failed": "..."},
// "object": {...}}]}. Output (stdout): one JSON array, per case {"status": "Current" |
// "InProgress" | "Failed"} or {"error": "..."}.
//
// A second mode evaluates CRD x-kubernetes-validations rules: input {"rules": [{"rule": "...",
// "self": {...}}]}, output per rule {"valid": true|false} or {"error": "..."}. `self` is the
// JSON value of the schema node the rule sits on, as the API server binds it. Only plain CEL
// is available here (no Kubernetes library functions such as url()), so rules tested this way
// must keep to it.
//
// A third mode evaluates a ValidatingAdmissionPolicy against admission requests: input
// {"admission": {"variables": [{"name": "...", "expression": "..."}], "validations":
// [{"expression": "...", "messageExpression": "..."}], "cases": [{"request": {...}, "object":
// {...} | null, "oldObject": {...} | null}]}}. Variables are evaluated in order, each seeing the
// ones before it as `variables.<name>`, as the API server binds them; objects are plain JSON
// (the API server's are typed by the OpenAPI schema, so a rule tested here must not rely on
// defaults of absent fields). Output: per case {"failed": [indexes of the validations that
// are false], "message": "<messageExpression of the first>"} or {"error": "..."} when a
// validation cannot be evaluated (the policy's failurePolicy Fail then refuses).
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
)

type exprs struct {
	Current    string `json:"current"`
	InProgress string `json:"inProgress"`
	Failed     string `json:"failed"`
}

type testCase struct {
	Exprs  exprs           `json:"exprs"`
	Object json.RawMessage `json:"object"`
}

type result struct {
	Status string `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
}

// newEnv mirrors the environment of fluxcd/pkg/runtime/cel: expressions are parsed, not
// compiled, because a custom resource's top-level fields are not declared variables.
func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
	)
}

func program(env *cel.Env, expr string) (cel.Program, error) {
	ast, issues := env.Parse(expr)
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("failed to parse the CEL expression '%s': %s", expr, issues.String())
	}
	return env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(100))
}

// normalize turns json.Number into int64 when integral, else float64, as the apimachinery
// unstructured decoder does; Flux reads observedGeneration as an int64 from such a map.
func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = normalize(x)
		}
		return t
	case []any:
		for i, x := range t {
			t[i] = normalize(x)
		}
		return t
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	}
	return v
}

func nestedInt64(obj map[string]any, path ...string) (int64, bool, error) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false, nil
		}
		if cur, ok = m[p]; !ok {
			return 0, false, nil
		}
	}
	i, ok := cur.(int64)
	if !ok {
		return 0, false, fmt.Errorf("%v accessor error: %v is of the type %T, expected int64", path, cur, cur)
	}
	return i, true, nil
}

// evaluate follows kustomize-controller's StatusEvaluator (RFC 0009): a status that speaks for
// an older generation is InProgress; then inProgress, failed, current, in that order; none
// true is InProgress.
func evaluate(env *cel.Env, c testCase) result {
	if c.Exprs.Current == "" {
		return result{Error: "expression Current not specified"}
	}
	dec := json.NewDecoder(bytes.NewReader(c.Object))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return result{Error: err.Error()}
	}
	obj := normalize(raw).(map[string]any)
	observed, ok, err := nestedInt64(obj, "status", "observedGeneration")
	if err != nil {
		return result{Error: err.Error()}
	}
	if ok {
		generation, ok, err := nestedInt64(obj, "metadata", "generation")
		if err != nil {
			return result{Error: err.Error()}
		}
		if ok && observed != generation {
			return result{Status: "InProgress"}
		}
	}
	for _, e := range []struct{ expr, status string }{
		{c.Exprs.InProgress, "InProgress"},
		{c.Exprs.Failed, "Failed"},
		{c.Exprs.Current, "Current"},
	} {
		if e.expr == "" {
			continue
		}
		prog, err := program(env, e.expr)
		if err != nil {
			return result{Error: err.Error()}
		}
		val, _, err := prog.Eval(obj)
		if err != nil {
			return result{Error: fmt.Sprintf("failed to evaluate the CEL expression '%s': %v", e.expr, err)}
		}
		b, ok := val.(types.Bool)
		if !ok {
			return result{Error: fmt.Sprintf("failed to evaluate CEL expression as boolean: '%s'", e.expr)}
		}
		if b {
			return result{Status: e.status}
		}
	}
	return result{Status: "InProgress"}
}

type ruleCase struct {
	Rule string          `json:"rule"`
	Self json.RawMessage `json:"self"`
}

type ruleResult struct {
	Valid *bool  `json:"valid,omitempty"`
	Error string `json:"error,omitempty"`
}

// evaluateRule compiles rule with `self` declared and evaluates it against c.Self.
func evaluateRule(env *cel.Env, c ruleCase) ruleResult {
	ruleEnv, err := env.Extend(cel.Variable("self", cel.DynType))
	if err != nil {
		return ruleResult{Error: err.Error()}
	}
	ast, issues := ruleEnv.Compile(c.Rule)
	if issues != nil && issues.Err() != nil {
		return ruleResult{Error: issues.String()}
	}
	prog, err := ruleEnv.Program(ast)
	if err != nil {
		return ruleResult{Error: err.Error()}
	}
	dec := json.NewDecoder(bytes.NewReader(c.Self))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return ruleResult{Error: err.Error()}
	}
	val, _, err := prog.Eval(map[string]any{"self": normalize(raw)})
	if err != nil {
		return ruleResult{Error: err.Error()}
	}
	b, ok := val.(types.Bool)
	if !ok {
		return ruleResult{Error: fmt.Sprintf("rule '%s' did not evaluate to a boolean", c.Rule)}
	}
	v := bool(b)
	return ruleResult{Valid: &v}
}

type namedExpr struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

type validation struct {
	Expression        string `json:"expression"`
	MessageExpression string `json:"messageExpression"`
}

type admissionCase struct {
	Request   json.RawMessage `json:"request"`
	Object    json.RawMessage `json:"object"`
	OldObject json.RawMessage `json:"oldObject"`
}

type admissionInput struct {
	Variables   []namedExpr     `json:"variables"`
	Validations []validation    `json:"validations"`
	Cases       []admissionCase `json:"cases"`
}

type admissionResult struct {
	Failed  []int  `json:"failed"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

func decodeJSON(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return normalize(v), nil
}

// evalIn compiles expr in env and evaluates it with act.
func evalIn(env *cel.Env, expr string, act map[string]any) (ref.Val, error) {
	ast, issues := env.Compile(expr)
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("cannot compile %q: %s", expr, issues.String())
	}
	prog, err := env.Program(ast)
	if err != nil {
		return nil, err
	}
	val, _, err := prog.Eval(act)
	if err != nil {
		return nil, fmt.Errorf("cannot evaluate %q: %v", expr, err)
	}
	return val, nil
}

func evaluateAdmission(env *cel.Env, in admissionInput, c admissionCase) admissionResult {
	polEnv, err := env.Extend(
		cel.Variable("request", cel.DynType),
		cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType),
		cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)),
	)
	if err != nil {
		return admissionResult{Error: err.Error()}
	}
	act := map[string]any{}
	for name, raw := range map[string]json.RawMessage{"request": c.Request, "object": c.Object, "oldObject": c.OldObject} {
		v, err := decodeJSON(raw)
		if err != nil {
			return admissionResult{Error: err.Error()}
		}
		if v == nil {
			act[name] = types.NullValue
		} else {
			act[name] = v
		}
	}
	vars := map[ref.Val]ref.Val{}
	for _, v := range in.Variables {
		act["variables"] = types.NewRefValMap(types.DefaultTypeAdapter, vars)
		// The API server evaluates a variable only when a rule reads it: an error is kept as the
		// variable's value, so it matters only where a rule would have read it.
		val, err := evalIn(polEnv, v.Expression, act)
		if err != nil {
			val = types.NewErr("variable %s: %v", v.Name, err)
		}
		vars[types.String(v.Name)] = val
	}
	act["variables"] = types.NewRefValMap(types.DefaultTypeAdapter, vars)
	out := admissionResult{Failed: []int{}}
	for i, v := range in.Validations {
		val, err := evalIn(polEnv, v.Expression, act)
		if err != nil {
			return admissionResult{Error: fmt.Sprintf("validation %d: %v", i, err)}
		}
		b, ok := val.(types.Bool)
		if !ok {
			return admissionResult{Error: fmt.Sprintf("validation %d is not a boolean", i)}
		}
		if b {
			continue
		}
		if len(out.Failed) == 0 && v.MessageExpression != "" {
			msg, err := evalIn(polEnv, v.MessageExpression, act)
			if err != nil {
				return admissionResult{Error: fmt.Sprintf("messageExpression %d: %v", i, err)}
			}
			s, ok := msg.(types.String)
			if !ok {
				return admissionResult{Error: fmt.Sprintf("messageExpression %d is not a string", i)}
			}
			out.Message = string(s)
		}
		out.Failed = append(out.Failed, i)
	}
	return out
}

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var input struct {
		Cases     []testCase      `json:"cases"`
		Rules     []ruleCase      `json:"rules"`
		Admission *admissionInput `json:"admission"`
	}
	if err := json.Unmarshal(in, &input); err != nil {
		fmt.Fprintln(os.Stderr, "cannot parse input:", err)
		os.Exit(2)
	}
	env, err := newEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if input.Admission != nil {
		outAdm := make([]admissionResult, 0, len(input.Admission.Cases))
		for _, c := range input.Admission.Cases {
			outAdm = append(outAdm, evaluateAdmission(env, *input.Admission, c))
		}
		if err := json.NewEncoder(os.Stdout).Encode(outAdm); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		return
	}
	if input.Rules != nil {
		outRules := make([]ruleResult, 0, len(input.Rules))
		for _, c := range input.Rules {
			outRules = append(outRules, evaluateRule(env, c))
		}
		if err := json.NewEncoder(os.Stdout).Encode(outRules); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		return
	}
	out := make([]result, 0, len(input.Cases))
	for _, c := range input.Cases {
		out = append(out, evaluate(env, c))
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
