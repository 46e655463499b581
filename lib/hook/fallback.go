package hook

import (
	"gpuprep/lib/config"
)

// fallbackFor decides what a prolog that failed with err does next when
// the job chose its profile (selection.unfit_profile): retry with the
// default profile ("default"), or with the job's profile without its
// required list ("drop"), or nothing ("fail", or a default selection, or
// an error that is bad input rather than this node's, or a MIG layout
// mismatch: the admin's layout, not the user's choice). how says it in
// words for the job record.
func fallbackFor(cfg *config.Config, sel config.Selection, err error) (retry config.Selection, how string, ok bool) {
	if err == nil || !IsNodeError(err) || isMIGError(err) || isHealthError(err) || sel.Source == config.FromDefault {
		return sel, "", false
	}
	switch cfg.Selection.UnfitProfile {
	case config.UnfitDefault:
		if cfg.Selection.DefaultProfile == sel.Profile {
			return sel, "", false
		}
		return config.Selection{Profile: cfg.Selection.DefaultProfile, Source: config.FromDefault, MPS: sel.MPS},
			"using the default profile " + `"` + cfg.Selection.DefaultProfile + `"`, true
	case config.UnfitDrop:
		retry = sel
		retry.DropRequired = true
		return retry, "applying it without its required knobs", true
	}
	return sel, "", false
}
