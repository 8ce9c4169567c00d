"""Every file and variable a run reads: suite folders, tenant.toml, the tenants file, the run settings. Imports rules."""

from kindgi_eval.inputs.catalogue import CATALOGUE_SEED, Seed
from kindgi_eval.inputs.golden import GOLDEN_DIR, default_eval_dir, is_packaged_golden
from kindgi_eval.inputs.file_limits import CONFIG_FILE_LIMIT, SUITE_FILE_LIMIT, FileTooLarge, mib, read_limited
from kindgi_eval.inputs.resume import changes_since, manifest_of, resumed_settings
from kindgi_eval.inputs.review_file import LABELS, REVIEW_COLUMNS, LabelFile, LabelLine, QueueKeys, check_labels, read_label_file
from kindgi_eval.inputs.settings import (
    DEFAULT_MODEL_TIMEOUT_S,
    GATEWAY_KEY,
    RunSettings,
    SETTING,
    SETTINGS,
    deployment_agent_url,
    deployment_gateway,
    resolve_settings,
    set_deployment_gateway,
)
from kindgi_eval.inputs.suite_folder import (
    CALIBRATION_FILE,
    CASES_FILE,
    FOLDER_KIND,
    KindFile,
    KindFilesReader,
    REGISTRY_FILE,
    SCENARIOS_FILE,
    ModelsOf,
    RegisteredAs,
    Suite,
    SuiteItems,
    SuiteIdentity,
    SuiteModels,
    check_suite_items,
    folder_hash,
    has_calibration_file,
    load_checked_suite,
    load_suite,
    folder_key,
    registered_name,
    registry_key,
    suite_identity,
    suite_key,
    tenant_names,
)
from kindgi_eval.inputs.tenant_file import load_tenant
from kindgi_eval.inputs.tenant_limits import limits_of, tenants_limits
from kindgi_eval.inputs.tenants_check import check_tenants
from kindgi_eval.inputs.tenants_file import (
    DeclaredAgent,
    tenants_path,
    TAG_RESULT,
    TAG_SUITE,
    TAG_TENANT,
    TENANTS_ENV,
    TenantSuite,
    Tenants,
    declared_variant,
    load_tenants,
    variant_settings,
)

__all__ = ["GOLDEN_DIR", "default_eval_dir", "is_packaged_golden", "LABELS", "REVIEW_COLUMNS", "LabelFile", "LabelLine", "QueueKeys", "check_labels", "read_label_file", "CATALOGUE_SEED", "Seed", "CALIBRATION_FILE", "CASES_FILE", "CONFIG_FILE_LIMIT", "DEFAULT_MODEL_TIMEOUT_S", "DeclaredAgent", "FOLDER_KIND", "FileTooLarge", "GATEWAY_KEY", "deployment_gateway", "deployment_agent_url", "set_deployment_gateway", "KindFile", "KindFilesReader", "ModelsOf", "REGISTRY_FILE", "RegisteredAs", "RunSettings", "SETTING", "SETTINGS", "SUITE_FILE_LIMIT", "Suite", "SuiteIdentity", "SuiteItems", "SuiteModels", "TAG_RESULT", "TAG_SUITE", "TAG_TENANT", "TENANTS_ENV", "TenantSuite", "Tenants", "changes_since", "check_suite_items", "declared_variant", "folder_hash", "folder_key", "has_calibration_file", "load_checked_suite", "load_suite", "load_tenant", "load_tenants", "manifest_of", "mib", "read_limited", "registered_name", "registry_key", "resolve_settings", "resumed_settings", "suite_identity", "suite_key", "tenant_names", "variant_settings", "limits_of", "tenants_limits", "check_tenants", "tenants_path", "SCENARIOS_FILE"]
