package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// metricDef describes a row of the table.
type metricDef struct {
	id, title, unit string
	higherBetter    bool
	api             map[string]string
}

func metricDefs(cfg *config) []metricDef {
	defs := []metricDef{
		{"put", "put/s, 1 job per call", "jobs/s", true, map[string]string{"hourglass": "Queue.Put", "asynq": "Client.Enqueue", "bullmq": "Queue.add"}},
		{"put_batch", fmt.Sprintf("put/s, batches of %d", cfg.batch), "jobs/s", true, map[string]string{"hourglass": "Queue.PutMany", "bullmq": "Queue.addBulk"}},
		{"consume", "consume/s", "jobs/s", true, map[string]string{"hourglass": "queue.Worker", "asynq": "asynq.Server", "bullmq": "Worker"}},
		{"lateness_p50", "delay lateness p50", "ms", false, nil},
		{"lateness_p99", "delay lateness p99", "ms", false, nil},
		{"lateness_max", "delay lateness max", "ms", false, nil},
		{"bytes_per_delayed_job", "bytes per delayed job", "B", false, nil},
		{"bytes_per_kept_job", "bytes per finished job kept with its result (60 s retention)", "B", false, map[string]string{"hourglass": "SetRetention + Reserve + Finish(result)", "asynq": "Retention + ResultWriter", "bullmq": "removeOnComplete {age: 60} + return value"}},
		{"put_delayed", "delayed put/s, 1 job per call, workers waiting", "jobs/s", true, map[string]string{"hourglass": "Queue.Put(Delay) + 8 blocking Reserve", "asynq": "Enqueue(ProcessIn) + Server"}},
		{"reserve_delete", "reserve+delete/s", "jobs/s", true, map[string]string{"hourglass": "Queue.Reserve + Queue.Delete, 8 goroutines", "asynq": "asynq.Server", "bullmq": "Worker"}},
		{"bs_put", "beanstalkd protocol put/s", "jobs/s", true, map[string]string{"hourglass": "hourglass serve --store redis://", "beanstalkd": "beanstalkd (memory)"}},
		{"bs_reserve_delete", "beanstalkd protocol reserve+delete/s", "jobs/s", true, map[string]string{"hourglass": "hourglass serve --store redis://", "beanstalkd": "beanstalkd (memory)"}},
		{"bsmem_put", "beanstalkd protocol put/s, in memory", "jobs/s", true, map[string]string{"hourglass": "hourglass serve --store mem://", "beanstalkd": "beanstalkd (memory)"}},
		{"bsmem_reserve_delete", "beanstalkd protocol reserve+delete/s, in memory", "jobs/s", true, map[string]string{"hourglass": "hourglass serve --store mem://", "beanstalkd": "beanstalkd (memory)"}},
		{"bs_put_proc_cpu", "server CPU per job, beanstalkd protocol put", "µs", false, map[string]string{"hourglass": "hourglass serve --store redis://", "beanstalkd": "beanstalkd (memory)"}},
		{"bs_reserve_delete_proc_cpu", "server CPU per job, beanstalkd protocol reserve+delete", "µs", false, map[string]string{"hourglass": "hourglass serve --store redis://", "beanstalkd": "beanstalkd (memory)"}},
		{"bsmem_put_proc_cpu", "server CPU per job, beanstalkd protocol put, in memory", "µs", false, map[string]string{"hourglass": "hourglass serve --store mem://", "beanstalkd": "beanstalkd (memory)"}},
		{"bsmem_reserve_delete_proc_cpu", "server CPU per job, beanstalkd protocol reserve+delete, in memory", "µs", false, map[string]string{"hourglass": "hourglass serve --store mem://", "beanstalkd": "beanstalkd (memory)"}},
		{"gcra_1key", "GCRA decisions/s, 16 goroutines, 1 key", "/s", true, map[string]string{"hourglass": "Limiter.Allow", "redis_rate": "Limiter.Allow"}},
		{"gcra_10k", "GCRA decisions/s, 16 goroutines, 10k keys", "/s", true, map[string]string{"hourglass": "Limiter.Allow", "redis_rate": "Limiter.Allow"}},
		{"lock_1", "lock obtain+release/s, 1 goroutine", "/s", true, map[string]string{"hourglass": "Client.TryObtain + Lock.Release", "redislock": "Obtain + Release"}},
		{"lock_8", "lock obtain+release/s, 8 goroutines, own names", "/s", true, map[string]string{"hourglass": "Client.TryObtain + Lock.Release", "redislock": "Obtain + Release"}},
		{"lat_put_p50", "single caller put p50", "µs", false, map[string]string{"hourglass": "Queue.Put", "asynq": "Client.Enqueue"}},
		{"lat_put_p99", "single caller put p99", "µs", false, map[string]string{"hourglass": "Queue.Put", "asynq": "Client.Enqueue"}},
		{"lat_rd_p50", "single caller reserve+delete p50", "µs", false, map[string]string{"hourglass": "Queue.Reserve + Queue.Delete"}},
		{"lat_rd_p99", "single caller reserve+delete p99", "µs", false, map[string]string{"hourglass": "Queue.Reserve + Queue.Delete"}},
	}
	defs = append(defs, cpuMetricDefs()...)
	defs = append(defs, schedMetricDefs(cfg)...)
	for _, what := range []string{"put", "consume"} {
		for _, k := range cfg.partitions {
			title := fmt.Sprintf("cluster %s/s, K=%d", what, k)
			if what == "put" {
				title = fmt.Sprintf("cluster put/s (Put), K=%d", k)
			}
			defs = append(defs, metricDef{fmt.Sprintf("cluster_%s_k%d", what, k), title, "jobs/s", true, nil})
		}
	}
	return defs
}

var defsCache []metricDef

func metricByID(id string) metricDef {
	for _, d := range defsCache {
		if d.id == id {
			return d
		}
	}
	return metricDef{id: id, title: id}
}

// series is the figures of one metric and system over the rounds.
type series struct {
	Metric string    `json:"metric"`
	Title  string    `json:"title"`
	Unit   string    `json:"unit"`
	System string    `json:"system"`
	API    string    `json:"api,omitempty"`
	Rounds []float64 `json:"rounds"`
	Median float64   `json:"median"`
	// OtherLoad is, per round, the CPU (in cores) that programs other
	// than queuebench, its redis-servers and node used during the run.
	OtherLoad []float64 `json:"other_load_cores"`
	// MedianOf is how many rounds the median is taken over: the
	// undisturbed ones, or all when every round was disturbed.
	MedianOf int `json:"median_of_rounds"`
}

type target struct {
	Check string  `json:"check"`
	Value float64 `json:"value"`
	Want  string  `json:"want"`
	Met   bool    `json:"met"`
}

type report struct {
	Date    string            `json:"date"`
	Command string            `json:"command"`
	Machine map[string]string `json:"machine"`
	Config  map[string]any    `json:"config"`
	Results []*series         `json:"results"`
	Targets []target          `json:"targets"`
	// Runs counts the workload runs recorded; Disturbed those during
	// which other programs used more than -max-other-load cores.
	Runs      int `json:"runs"`
	Disturbed int `json:"disturbed_runs"`
	// RedisCPU is, per hourglass run on the standalone server, the
	// commands Redis ran and the CPU they took (INFO commandstats deltas).
	RedisCPU []redisCPU `json:"redis_cpu,omitempty"`

	maxOtherLoad float64
	Error        string `json:"error,omitempty"`
}

func (r *report) get(metric, sys string) *series {
	for _, s := range r.Results {
		if s.Metric == metric && s.System == sys {
			return s
		}
	}
	return nil
}

func (r *report) add(metric, sys string, round int, v, load float64) {
	s := r.get(metric, sys)
	if s == nil {
		d := metricByID(metric)
		s = &series{Metric: metric, Title: d.title, Unit: d.unit, System: sys, API: d.api[sys]}
		r.Results = append(r.Results, s)
	}
	for len(s.Rounds) <= round {
		s.Rounds = append(s.Rounds, math.NaN())
		s.OtherLoad = append(s.OtherLoad, math.NaN())
	}
	s.Rounds[round], s.OtherLoad[round] = v, load
	// The median of the undisturbed rounds, or of all when every round
	// was disturbed.
	var all, quiet []float64
	for i, x := range s.Rounds {
		if math.IsNaN(x) {
			continue
		}
		all = append(all, x)
		if !(s.OtherLoad[i] > r.maxOtherLoad) {
			quiet = append(quiet, x)
		}
	}
	if len(quiet) > 0 {
		s.Median, s.MedianOf = median(quiet), len(quiet)
	} else {
		s.Median, s.MedianOf = median(all), len(all)
	}
}

func (r *report) med(metric, sys string) (float64, bool) {
	s := r.get(metric, sys)
	if s == nil || math.IsNaN(s.Median) {
		return 0, false
	}
	return s.Median, true
}

// computeTargets checks hourglass's goals against the medians.
func (r *report) computeTargets() {
	ratio := func(check, a, sa, b, sb string, want float64) {
		x, ok1 := r.med(a, sa)
		y, ok2 := r.med(b, sb)
		if ok1 && ok2 && y > 0 {
			v := x / y
			r.Targets = append(r.Targets, target{check, v, fmt.Sprintf(">= %.1fx", want), v >= want})
		}
	}
	ratio("consume/s hourglass / asynq", "consume", "hourglass", "consume", "asynq", 3)
	ratio("consume/s hourglass / bullmq", "consume", "hourglass", "consume", "bullmq", 2)
	ratio("put/s hourglass Put / asynq Enqueue", "put", "hourglass", "put", "asynq", 1.2)
	ratio("put/s hourglass PutMany / asynq Enqueue", "put_batch", "hourglass", "put", "asynq", 3)
	if v, ok := r.med("lateness_p99", "hourglass"); ok {
		r.Targets = append(r.Targets, target{"lateness p99 hourglass (ms)", v, "<= 5 ms", v <= 5})
	}
	if x, ok := r.med("bytes_per_delayed_job", "hourglass"); ok {
		if y, ok := r.med("bytes_per_delayed_job", "asynq"); ok && y > 0 {
			r.Targets = append(r.Targets, target{"bytes/delayed job hourglass / asynq", x / y, "<= 0.5x", x/y <= 0.5})
		}
	}
}

func fmtVal(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case unit == "ms", unit == "µs" && v < 1000:
		return fmt.Sprintf("%.1f", v)
	case unit == "jobs/tick":
		return fmt.Sprintf("%.3f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func (r *report) print(out io.Writer) {
	var systems []string
	for _, s := range systemOrder {
		for _, x := range r.Results {
			if x.System == s {
				systems = append(systems, s)
				break
			}
		}
	}
	fmt.Fprintf(out, "\nqueuebench %s\n%s\n", r.Date, r.Command)
	keys := make([]string, 0, len(r.Machine))
	for k := range r.Machine {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(out, "  %s: %s\n", k, r.Machine[k])
	}
	fmt.Fprintf(out, "\nMedians over %v rounds (over the undisturbed rounds only, where there are any; see the raw figures)\n\n", r.Config["rounds"])
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "metric\tunit\t")
	for _, s := range systems {
		fmt.Fprintf(tw, "%s\t", s)
	}
	fmt.Fprintln(tw)
	for _, d := range defsCache {
		found := false
		row := fmt.Sprintf("%s\t%s\t", d.title, d.unit)
		for _, s := range systems {
			v, ok := r.med(d.id, s)
			if !ok {
				row += "-\t"
				continue
			}
			found = true
			row += fmtVal(v, d.unit) + "\t"
		}
		if found {
			fmt.Fprintln(tw, row)
		}
	}
	_ = tw.Flush()

	if len(r.Targets) > 0 {
		fmt.Fprintf(out, "\nTargets (medians)\n\n")
		tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "check\tvalue\twant\tmet")
		for _, t := range r.Targets {
			met := "MISSED"
			if t.Met {
				met = "met"
			}
			fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\n", t.Check, t.Value, t.Want, met)
		}
		_ = tw.Flush()
	}

	fmt.Fprintf(out, "\nRaw figures per round\n\n")
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tsystem\tapi\tunit\trounds\tother programs, cores\tmedian of")
	for _, d := range defsCache {
		for _, s := range systems {
			x := r.get(d.id, s)
			if x == nil {
				continue
			}
			var vs, ls []string
			for i, v := range x.Rounds {
				vs = append(vs, fmtVal(v, d.unit))
				ls = append(ls, fmt.Sprintf("%.2f", x.OtherLoad[i]))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", d.title, s, x.API, d.unit, strings.Join(vs, "  "), strings.Join(ls, "  "), x.MedianOf)
		}
	}
	_ = tw.Flush()
	r.printCompare(out)
	r.printRedisCPU(out)
	fmt.Fprintf(out, "\n%d of %d runs were disturbed: other programs used more than %v cores during them.\n", r.Disturbed, r.Runs, r.Config["max_other_load"])
	if r.Error != "" {
		fmt.Fprintf(out, "\nABORTED: %s\n", r.Error)
	}
}

func (r *report) writeJSON(path string) error {
	// NaN is not JSON: a missing round becomes null.
	type jseries struct {
		*series
		Rounds    []*float64 `json:"rounds"`
		Median    *float64   `json:"median"`
		OtherLoad []*float64 `json:"other_load_cores"`
	}
	num := func(v float64) *float64 {
		if math.IsNaN(v) {
			return nil
		}
		return &v
	}
	out := struct {
		*report
		Results []jseries `json:"results"`
	}{report: r}
	for _, s := range r.Results {
		j := jseries{series: s, Median: num(s.Median)}
		for i, v := range s.Rounds {
			j.Rounds = append(j.Rounds, num(v))
			j.OtherLoad = append(j.OtherLoad, num(s.OtherLoad[i]))
		}
		out.Results = append(out.Results, j)
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
