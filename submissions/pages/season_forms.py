"""The forms of the season settings page (pages/season_settings.py), one per control, each with the
reason the audit trail keeps. The ranking and weight forms are built from the rules' own declarations
(rules/ranking.py `settings_spec`, rules/weights.py `key_choices`): one fieldset per rule, of which
only the chosen rule's fields are read."""

from django import forms
from django.conf import settings
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _

from submissions import harness_versions
from submissions.models import GpuType, Issue, RankingRule, SecondJudging
from submissions.rules import ranking, weights
from submissions.services.season_settings import MAX_SUBMISSION_LIMIT, REASON_MAX_CHARS

# Blank rows an organizer may fill in below the ones already set (operators, samples).
EXTRA_ROWS = 3
MAX_ROWS = 400  # a posted form names at most this many rows of one kind


def reason_field():
    return forms.CharField(
        label=_("Reason"), max_length=REASON_MAX_CHARS, help_text=_("Kept in the audit trail with the change."),
        error_messages={"required": _("Say why: the reason is kept in the audit trail.")},
        widget=forms.TextInput(attrs={"placeholder": _("reason (kept in the audit trail)")}))


class ReasonForm(forms.Form):
    """An action whose only input is why (the scoreboard freeze)."""

    reason = reason_field()


def _minute(value):
    return value.replace(second=0, microsecond=0) if value else value


class MinuteInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, attrs=None):
        super().__init__(attrs, format="%Y-%m-%dT%H:%M")


class ScheduleForm(forms.Form):
    """When the season runs, whether it takes submissions, and how many."""

    starts_at = forms.DateTimeField(label=_("Starts at"), widget=MinuteInput())
    ends_at = forms.DateTimeField(label=_("Ends at"), required=False, widget=MinuteInput(),
                                  help_text=_("Empty: the season has no end."))
    is_open = forms.BooleanField(label=_("Open: takes new issues and submissions"), required=False, label_suffix="")
    code_public_after_end = forms.BooleanField(
        label=_("Everyone's code becomes visible once the season has ended (accepted code always is)"),
        required=False, label_suffix="")
    max_submissions_per_hour = forms.IntegerField(label=_("Submissions per contestant and hour"), required=False,
                                                  min_value=1, max_value=MAX_SUBMISSION_LIMIT)
    max_submissions_per_day = forms.IntegerField(label=_("Submissions per contestant and day"), required=False,
                                                 min_value=1, max_value=MAX_SUBMISSION_LIMIT)
    reason = reason_field()

    FIELDS = ("starts_at", "ends_at", "is_open", "code_public_after_end", "max_submissions_per_hour",
              "max_submissions_per_day")

    def __init__(self, season, *args, **kwargs):
        self.season = season
        kwargs.setdefault("initial", {name: getattr(season, name) for name in self.FIELDS})
        super().__init__(*args, prefix="schedule", **kwargs)
        zone = settings.TIME_ZONE
        self.fields["starts_at"].help_text = _("In the site's time zone, %(zone)s.") % {"zone": zone}
        for name, default in (("max_submissions_per_hour", settings.SUBMISSIONS_PER_HOUR),
                              ("max_submissions_per_day", settings.SUBMISSIONS_PER_DAY)):
            self.fields[name].help_text = _("Empty: the site's default (%(count)s).") % {"count": default}

    def _kept_to_the_minute(self, name):
        # The page shows times to the minute: a time left as shown is the stored one, seconds and all.
        value, stored = self.cleaned_data.get(name), getattr(self.season, name)
        return stored if value is not None and stored is not None and value == _minute(stored) else value

    def clean_starts_at(self):
        return self._kept_to_the_minute("starts_at")

    def clean_ends_at(self):
        return self._kept_to_the_minute("ends_at")

    def clean(self):
        data = super().clean()
        if data.get("starts_at") and data.get("ends_at") and data["ends_at"] <= data["starts_at"]:
            self.add_error("ends_at", _("The season must end after it starts."))
        return data

    def changes(self):
        return {name: self.cleaned_data[name] for name in self.FIELDS}


class GpuTypeChoices(forms.ModelMultipleChoiceField):
    def label_from_instance(self, gpu_type):
        return f"{gpu_type.slug} — {gpu_type.name}"


class JudgingForm(forms.Form):
    """Where and how the season's submissions are judged."""

    gpu_types = GpuTypeChoices(
        queryset=GpuType.objects.order_by("slug"), widget=forms.CheckboxSelectMultiple, label=_("GPU types"),
        error_messages={"required": _("Pick at least one GPU type: each submission is judged once on every type.")},
        help_text=_("Each new submission gets one run per type. Earlier submissions get no run on a type added "
                    "now: rejudge the season for that."))
    second_judging = forms.ChoiceField(
        choices=SecondJudging.choices, label=_("Second judging"),
        help_text=_("Which passed results of an untrusted host wait for a second judging on another host before "
                    "the public sees them."))
    min_harness_version = forms.CharField(
        label=_("Minimum harness version"), required=False, max_length=20, validators=[harness_versions.validate],
        help_text=_("The oldest agent harness that may judge this season's runs, e.g. 1.3 (empty: any). Raise it "
                    "after upgrading the fleet, or runs wait for an upgraded worker."))
    reason = reason_field()

    def __init__(self, season, *args, **kwargs):
        kwargs.setdefault("initial", {"gpu_types": list(season.gpu_types.all()),
                                      "second_judging": season.second_judging,
                                      "min_harness_version": season.min_harness_version})
        super().__init__(*args, prefix="judging", **kwargs)

    def clean_min_harness_version(self):
        return self.cleaned_data["min_harness_version"].strip()

    def changes(self):
        return {"gpu_types": list(self.cleaned_data["gpu_types"]),
                "second_judging": self.cleaned_data["second_judging"],
                "min_harness_version": self.cleaned_data["min_harness_version"]}


class RuleForm(forms.Form):
    """A rule chosen among several, each with fields of its own: `rule_fields[name]` lists the field names
    of rule `name`. The fields of the other rules are shown (the page's script hides them) but never read."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rule_fields = {}

    def clean(self):
        data = super().clean()
        chosen = data.get("rule")
        for name, fields in self.rule_fields.items():
            if name != chosen:
                for field in fields:  # a stray value in a hidden rule's field stops nothing
                    self._errors.pop(field, None)
                    data.pop(field, None)
        return data


class RankingForm(RuleForm):
    rule = forms.ChoiceField(choices=RankingRule.choices, label=_("Ranking rule"))
    reason = reason_field()

    def __init__(self, season, *args, **kwargs):
        current = ranking.rule_of(season)
        initial = {"rule": season.ranking_rule}
        super().__init__(*args, prefix="ranking", initial=initial, **kwargs)
        specs = {name: spec for name, _label, spec in ranking.settings_catalog()}
        for name in ranking.rule_names():
            self.rule_fields[name] = []
            for setting in specs.get(name, []):
                field_name = f"{name}-{setting.key}"
                value = current.settings[setting.key] if name == season.ranking_rule else setting.default
                if setting.type is bool:
                    field = forms.BooleanField(required=False, label_suffix="")
                else:
                    field = forms.IntegerField()
                field.label, field.help_text, field.initial = setting.key, setting.help, value
                self.fields[field_name] = field
                self.rule_fields[name].append(field_name)
        self.order_fields(["rule", *[f for fields in self.rule_fields.values() for f in fields], "reason"])

    def fieldsets(self):
        """[(rule name, [its bound fields])] of every rule, for the template."""
        return [(name, [self[f] for f in fields]) for name, fields in self.rule_fields.items()]

    def settings(self):
        rule = self.cleaned_data["rule"]
        return {field.split("-", 1)[1]: self.cleaned_data[field] for field in self.rule_fields[rule]}

    def clean(self):
        data = super().clean()
        if data.get("rule") and not self.errors:
            try:
                ranking.get_rule(data["rule"], self.settings())
            except ranking.RankingSettingsError as exc:
                self.add_error(None, str(exc))
        return data


def _weight_field(**kwargs):
    return forms.FloatField(min_value=0, max_value=weights.MAX_WEIGHT, **kwargs)


def _row_field(make, label, **kwargs):
    """A field of a row of the form's tables: its column heading names it, for a screen reader too."""
    field = make(required=False, label=label, **kwargs)
    field.widget.attrs["aria-label"] = label
    return field


def _posted_rows(data, prefix):
    """How many rows named `prefix-<i>` the posted form has (the highest i + 1)."""
    found = 0
    for key in data or ():
        if key.startswith(prefix):
            index = key[len(prefix):]
            if index.isdigit() and int(index) < MAX_ROWS:
                found = max(found, int(index) + 1)
    return found


class WeightsForm(RuleForm):
    """The dataset's weight rule: its `default`, its table (a field per key when the rule names its keys,
    rows of operator and weight otherwise), and the samples whose weight is set by hand."""

    rule = forms.ChoiceField(label=_("Weight rule"))
    default = _weight_field(label=_("Default weight"))
    reason = reason_field()

    def __init__(self, season, *args, **kwargs):
        self.season = season
        current = weights.rule_of(season)
        stored = current.settings
        super().__init__(*args, prefix="weights", initial={"rule": season.dataset_weight_rule,
                                                          "default": stored["default"]}, **kwargs)
        self.fields["default"].help_text = (_("The weight of a sample nothing else weighs (0 to %(max)s).")
                                            % {"max": f"{weights.MAX_WEIGHT:g}"})
        self.catalog = weights.catalog()
        self.fields["rule"].choices = [(name, f"{name}: {label}") for name, label, _help in self.catalog]
        posted = self.data if self.is_bound else None
        for name, _label, _help in self.catalog:
            cls = type(weights.get_rule(name))
            table = stored.get("weights", {}) if name == season.dataset_weight_rule else {}
            self.rule_fields[name] = []
            if cls.keys_label is None:
                continue
            choices = cls.key_choices()
            if choices is not None:
                for key, label in choices:  # "Level 3", "Framework PaddlePaddle"
                    self._add(name, f"{name}-{key}", _weight_field(
                        required=False, label=f"{capfirst(cls.keys_label)} {label}", initial=table.get(key)))
            else:
                rows = max(len(table) + EXTRA_ROWS, _posted_rows(posted, f"{self.prefix}-{name}-key-"))
                for index, (key, weight) in enumerate(list(table.items()) + [("", None)] * (rows - len(table))):
                    self._add(name, f"{name}-key-{index}", _row_field(forms.CharField, cls.keys_label, initial=key,
                                                                       max_length=200))
                    self._add(name, f"{name}-weight-{index}", _row_field(_weight_field, _("Weight"), initial=weight))
        samples = stored["samples"]
        self.sample_rows = max(len(samples) + EXTRA_ROWS, _posted_rows(posted, f"{self.prefix}-sample-code-"))
        for index, (code, weight) in enumerate(list(samples.items()) + [("", None)] * (self.sample_rows - len(samples))):
            self.fields[f"sample-code-{index}"] = _row_field(forms.CharField, _("Issue code"), initial=code,
                                                             max_length=16)
            self.fields[f"sample-weight-{index}"] = _row_field(_weight_field, _("Weight"), initial=weight)
        self.order_fields(["rule", "default"])

    def _add(self, rule, name, field):
        self.fields[name] = field
        self.rule_fields[rule].append(name)

    def fieldsets(self):
        sets = []
        for name, label, help_text in self.catalog:
            fields = [self[f] for f in self.rule_fields[name]]
            rows = [(self[f], self[f.replace("-key-", "-weight-")]) for f in self.rule_fields[name] if "-key-" in f]
            sets.append({"name": name, "label": label, "help": help_text, "rows": rows,
                         "fields": [] if rows else fields,
                         "keys_label": type(weights.get_rule(name)).keys_label})
        return sets

    def samples(self):
        return [(self[f"sample-code-{i}"], self[f"sample-weight-{i}"]) for i in range(self.sample_rows)]

    def _rows(self, key_of, weight_of, indices, clean_key, where):
        """{key: weight} of the filled-in rows; errors next to the row at fault."""
        found = {}
        for index in indices:
            key_field, weight_field = key_of(index), weight_of(index)
            raw, weight = (self.cleaned_data.get(key_field) or "").strip(), self.cleaned_data.get(weight_field)
            if key_field in self._errors or weight_field in self._errors or (not raw and weight is None):
                continue
            if not raw:
                self.add_error(key_field, _("Say which %(what)s this weight is for.") % {"what": where})
                continue
            if weight is None:
                self.add_error(weight_field, _("Give %(key)s a weight, or empty the row.") % {"key": raw})
                continue
            try:
                key = clean_key(raw)
            except weights.WeightSettingsError as exc:
                self.add_error(key_field, str(exc))
                continue
            if key in found:
                self.add_error(key_field, _("%(key)s is named twice.") % {"key": raw})
                continue
            found[key] = weight
        return found

    def _clean_sample_code(self, raw):
        code = raw.upper()
        if not weights.is_issue_code(code):
            raise weights.WeightSettingsError(_("An issue code is six capital letters, like ICTXSZ."))
        if not Issue.objects.filter(season=self.season, code=code).exists():
            raise weights.WeightSettingsError(_("%(code)s is not an issue of season %(season)s.")
                                              % {"code": code, "season": self.season.code})
        return code

    def clean(self):
        data = super().clean()
        rule = data.get("rule")
        if not rule:
            return data
        table = {}
        for field in self.rule_fields[rule]:
            if "-key-" in field:
                continue
            if "-weight-" not in field and data.get(field) is not None:
                table[field.split("-", 1)[1]] = data[field]
        if any("-key-" in f for f in self.rule_fields[rule]):
            cls = type(weights.get_rule(rule))
            indices = [int(f.rsplit("-", 1)[1]) for f in self.rule_fields[rule] if "-key-" in f]
            table = self._rows(lambda i: f"{rule}-key-{i}", lambda i: f"{rule}-weight-{i}", indices, cls.clean_key,
                               cls.keys_label)
        samples = self._rows(lambda i: f"sample-code-{i}", lambda i: f"sample-weight-{i}", range(self.sample_rows),
                             self._clean_sample_code, _("issue"))
        self.rule_settings = {"default": data.get("default"), "samples": samples}
        if type(weights.get_rule(rule)).keys_label is not None:
            self.rule_settings["weights"] = table
        if not self.errors:
            try:
                weights.get_rule(rule, self.rule_settings)
            except weights.WeightSettingsError as exc:
                self.add_error(None, str(exc))
        return data

    def settings(self):
        return self.rule_settings
