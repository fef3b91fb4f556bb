"""Strict document models, one module per document kind (no pricing here).

Every load or validation failure is a ``DocumentError`` naming the file, the key path, the
value and what is accepted.
"""

from __future__ import annotations

from latencykernel.documents.base_models import StrictModel
from latencykernel.documents.cache import clear_cache
from latencykernel.documents.chip import Chip, load_chip
from latencykernel.documents.coefficients import CoefficientEntry, CoefficientSet, Scope, Source, load_coefficient_set
from latencykernel.documents.fabric import Fabric, load_fabric
from latencykernel.documents.graph import (
    LayerKind,
    ModelGraph,
    ModelIdentity,
    Node,
    Stack,
    load_graph,
    load_model_identity,
)
from latencykernel.documents.rules import EngineRules, lookup_rules
from latencykernel.documents.scenario import (
    Cluster,
    Deployment,
    Engine,
    Parallel,
    Pool,
    Scenario,
    check_bundle,
    load_bundle,
)
from latencykernel.documents.storage import StorageClass, load_storage
from latencykernel.documents.validation import validate
from latencykernel.documents.yaml_loader import read_yaml, strip_comment_keys

__all__ = [
    "Chip",
    "load_chip",
    "CoefficientEntry",
    "CoefficientSet",
    "Scope",
    "Source",
    "load_coefficient_set",
    "StrictModel",
    "clear_cache",
    "read_yaml",
    "strip_comment_keys",
    "validate",
    "Fabric",
    "load_fabric",
    "LayerKind",
    "ModelGraph",
    "ModelIdentity",
    "Node",
    "Stack",
    "load_graph",
    "load_model_identity",
    "EngineRules",
    "lookup_rules",
    "Cluster",
    "Deployment",
    "Engine",
    "Parallel",
    "Pool",
    "Scenario",
    "check_bundle",
    "load_bundle",
    "StorageClass",
    "load_storage",
]
