"""Every file and variable a run reads: suite folders, tenant.toml, the tenants file, the run settings. Imports spec."""

from kindgi_eval.inputs.settings import DEFAULT_MODEL_TIMEOUT_S, SETTING, SETTINGS, RunSettings, resolve_settings
from kindgi_eval.inputs.suite_folder import (
    Suite,
    SuiteItems,
    check_suite_items,
    has_calibration_file,
    load_checked_suite,
    load_suite,
    suite_key,
)
from kindgi_eval.inputs.tenant_file import load_tenant
from kindgi_eval.inputs.tenants_file import TAG_RESULT, TAG_SUITE, TAG_TENANT, TENANTS_ENV, TenantSuite, load_tenants

__all__ = ["DEFAULT_MODEL_TIMEOUT_S", "RunSettings", "SETTING", "SETTINGS", "Suite", "SuiteItems", "TAG_RESULT", "TAG_SUITE", "TAG_TENANT", "TENANTS_ENV", "TenantSuite", "check_suite_items", "has_calibration_file", "load_checked_suite", "load_suite", "load_tenant", "load_tenants", "resolve_settings", "suite_key"]
