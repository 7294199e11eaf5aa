package cron

import (
	"strings"

	"talon/internal/automation"
)

// Defaults of §6.4.
const (
	alertAfter      = 2
	alertCooldownMs = 3_600_000
)

// Alert is a notice the gateway should send for a job (§6.4, R5.6):
// the scheduler keeps the bookkeeping (threshold, cooldown per incident,
// across restarts through the job state); the gateway resolves the
// route ("last", channels) and sends.
type Alert struct {
	Kind              string // AlertFailure, AlertRecovery or AlertAutoDisabled
	ConsecutiveErrors int
	Error             string
	// Settings are the merged settings: job → global → defaults, with the
	// destination by §6.4's route order (it may be empty: then there is
	// no route and the gateway drops the alert).
	Settings automation.FailureAlert
	Job      automation.Job
}

// alert decides §6.4's notice for a finished run and updates the
// incident bookkeeping in st. autoDisabled says this run turned the job
// off: that notice goes out even when alerts are off (R5.6).
func alert(j automation.Job, st *automation.JobState, o Outcome, nowMs int64, global *automation.FailureAlert, autoDisabled bool) *Alert {
	set, on := alertSettings(j, global)
	mk := func(kind string) *Alert {
		jj := j
		jj.State = *st
		return &Alert{Kind: kind, ConsecutiveErrors: st.ConsecutiveErrors, Error: o.Error, Settings: set, Job: jj}
	}
	if autoDisabled {
		return mk(AlertAutoDisabled)
	}
	if !on {
		return nil
	}
	count, cause := 0, ""
	switch {
	case o.Status == automation.StatusOK:
		if st.AlertCause == "" {
			return nil
		}
		st.AlertCause, st.LastAlertAtMs = "", nil
		return mk(AlertRecovery)
	case o.Status == automation.StatusError:
		count, cause = st.ConsecutiveErrors, incident(o.Error)
	case set.IncludeSkipped:
		count, cause = st.ConsecutiveSkipped, "skipped: "+incident(o.Error)
	}
	if count < set.After {
		return nil
	}
	same := cause == st.AlertCause && st.LastAlertAtMs != nil
	if same && nowMs-*st.LastAlertAtMs < set.CooldownMs {
		return nil
	}
	st.AlertCause, st.LastAlertAtMs = cause, ptr(nowMs)
	return mk(AlertFailure)
}

// alertSettings merges a job's failureAlert over the tenant's
// cron.failureAlert and the defaults, and reports whether alerts are on:
// failureAlert false turns them off, and bestEffort delivery turns off
// the inherited ones.
func alertSettings(j automation.Job, global *automation.FailureAlert) (automation.FailureAlert, bool) {
	own := j.FailureAlert
	if own != nil && own.Disabled {
		return automation.FailureAlert{}, false
	}
	m := automation.FailureAlert{After: alertAfter, CooldownMs: alertCooldownMs, Mode: automation.DeliverAnnounce}
	for _, fa := range []*automation.FailureAlert{global, own} {
		if fa == nil {
			continue
		}
		if fa.Enabled != nil {
			m.Enabled = fa.Enabled
		}
		if fa.After > 0 {
			m.After = fa.After
		}
		if fa.CooldownMs > 0 {
			m.CooldownMs = fa.CooldownMs
		}
		if fa.Mode != "" {
			m.Mode = fa.Mode
		}
		m.IncludeSkipped = m.IncludeSkipped || fa.IncludeSkipped
	}
	m.Destination = route(j, global)
	on := m.Enabled == nil || *m.Enabled
	if own == nil && j.Delivery != nil && j.Delivery.BestEffort {
		on = false
	}
	return m, on
}

// route is §6.4's destination order: the job's failureAlert fields,
// then delivery.failureDestination, then the global one, then the job's
// announce target.
func route(j automation.Job, global *automation.FailureAlert) automation.Destination {
	var cands []automation.Destination
	if j.FailureAlert != nil {
		cands = append(cands, j.FailureAlert.Destination)
	}
	if d := j.Delivery; d != nil && d.FailureDestination != nil {
		cands = append(cands, *d.FailureDestination)
	}
	if global != nil {
		cands = append(cands, global.Destination)
	}
	if d := j.Delivery; d != nil && d.Mode == automation.DeliverAnnounce {
		cands = append(cands, automation.Destination{Channel: d.Channel, To: d.To, AccountID: d.AccountID})
	}
	for _, c := range cands {
		if c.Channel != "" || c.To != "" {
			return c
		}
	}
	return automation.Destination{}
}

// incident is the cause an alert's cooldown is keyed on: the error's
// first line, bounded, so the same failure is one incident.
func incident(errText string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(errText), "\n")
	if r := []rune(line); len(r) > maxCauseRunes {
		line = string(r[:maxCauseRunes])
	}
	return line
}
