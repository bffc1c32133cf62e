package main

// The configuration both services run: envoyproxy/ratelimit's format only.
const diffConfig = `domain: diff
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: remote_address
    value: 10.0.0.1
    rate_limit: {unlimited: true}
  - key: tenant
    value: acme
    rate_limit: {unit: hour, requests_per_unit: 100}
    descriptors:
      - key: path
        value: /upload
        rate_limit: {unit: hour, requests_per_unit: 2}
  - key: user_agent
    value: bot-*
    rate_limit: {unit: day, requests_per_unit: 1}
  - key: files
    value: shared*
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 2}
  - key: shadowed
    shadow_mode: true
    rate_limit: {unit: day, requests_per_unit: 1}
  - key: quota
    quota_mode: true
    rate_limit: {unit: day, requests_per_unit: 1}
  - key: plan
    rate_limit: {name: plan_limit, unit: day, requests_per_unit: 1}
  - key: plan_override
    rate_limit:
      unit: day
      requests_per_unit: 5
      replaces: [{name: plan_limit}]
  - key: huge
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: none
    rate_limit: {unit: hour, requests_per_unit: 0}
  - key: ten
    rate_limit: {unit: hour, requests_per_unit: 10}
  - key: weekly
    rate_limit: {unit: week, requests_per_unit: 2}
  - key: monthly
    rate_limit: {unit: month, requests_per_unit: 2}
  - key: yearly
    rate_limit: {unit: year, requests_per_unit: 2}
  - key: user
    value_to_metric: true
    detailed_metric: true
    rate_limit: {unit: hour, requests_per_unit: 5}
`

// corpus are configuration files: each is loaded by both services'
// loaders, which must agree on accepting or refusing it.
var corpus = []struct{ name, yaml string }{
	{"the configuration of the run", diffConfig},
	{"a billion a second", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1000000000}\n"},
	{"uint32 max", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: SECOND, requests_per_unit: 4294967295}\n"},
	{"beyond uint32", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 4294967296}\n"},
	{"negative", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: -1}\n"},
	{"fraction", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1.5}\n"},
	{"quoted number", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: \"5\"}\n"},
	{"zero", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: minute, requests_per_unit: 0}\n"},
	{"no requests_per_unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: minute}\n"},
	{"no unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {requests_per_unit: 1}\n"},
	{"unknown unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n"},
	{"unit UNKNOWN", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: unknown, requests_per_unit: 1}\n"},
	{"week, month, year, any case", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: Week, requests_per_unit: 1}\n  - key: b\n    rate_limit: {unit: MONTH, requests_per_unit: 1}\n  - key: c\n    rate_limit: {unit: year, requests_per_unit: 1}\n"},
	{"unlimited with a unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unlimited: true, unit: second}\n"},
	{"unlimited with an unknown unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unlimited: true, unit: fortnight}\n"},
	{"unlimited with requests", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unlimited: true, requests_per_unit: 4}\n"},
	{"unknown field", "domain: d\ndescriptors:\n  - key: a\n    colour: blue\n"},
	{"a field of the format out of place", "domain: d\ndescriptors:\n  - key: a\n    unit: minute\n    rate_limit: {unit: minute, requests_per_unit: 1, key: b}\n"},
	{"no key", "domain: d\ndescriptors:\n  - value: a\n"},
	{"duplicate descriptor", "domain: d\ndescriptors:\n  - key: a\n  - key: a\n"},
	{"duplicate key and value", "domain: d\ndescriptors:\n  - key: a\n    value: b\n  - key: a\n    value: b\n"},
	{"no domain", "descriptors:\n  - key: a\n"},
	{"empty file", ""},
	{"list of strings", "domain: d\ndescriptors:\n  - a\n"},
	{"descriptors a mapping", "domain: d\ndescriptors:\n  key: a\n"},
	{"share_threshold on a wildcard", "domain: d\ndescriptors:\n  - key: a\n    value: b*\n    share_threshold: true\n    rate_limit: {unit: hour, requests_per_unit: 1}\n"},
	{"share_threshold without a wildcard", "domain: d\ndescriptors:\n  - key: a\n    value: b\n    share_threshold: true\n"},
	{"every flag", "domain: d\ndescriptors:\n  - key: a\n    shadow_mode: true\n    quota_mode: true\n    detailed_metric: true\n    value_to_metric: true\n    rate_limit: {name: n, unit: hour, requests_per_unit: 1}\n"},
	{"YAML 1.1 booleans", "domain: d\ndescriptors:\n  - key: a\n    shadow_mode: yes\n    detailed_metric: off\n"},
	{"bad boolean", "domain: d\ndescriptors:\n  - key: a\n    shadow_mode: maybe\n"},
	{"a name given twice", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {name: n, unit: hour, requests_per_unit: 1}\n  - key: b\n    rate_limit: {name: n, unit: hour, requests_per_unit: 1}\n"},
	{"replaces its own name", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {name: n, unit: hour, requests_per_unit: 1, replaces: [{name: n}]}\n"},
	{"replaces an empty name", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: hour, requests_per_unit: 1, replaces: [{name: \"\"}]}\n"},
	{"replaces an unknown name", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: hour, requests_per_unit: 1, replaces: [{name: nobody}]}\n"},
	{"rate_limit null", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n"},
	{"a number as value", "domain: d\ndescriptors:\n  - key: a\n    value: 5\n    rate_limit: {unit: hour, requests_per_unit: 1}\n"},
	{"syntax error", "domain: d\ndescriptors:\n  - key: [\n"},
	{"a top-level list", "- domain: d\n"},
}
