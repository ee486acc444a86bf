"""The scheduling readers never raise: garbage in every slot of pod and node objects comes
out as problems, and what is read still holds only valid values."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.core.nodefilters import EFFECTS, OPERATORS
from advisor.podspec.node import read_node_scheduling
from advisor.podspec.scheduling import read_pod_scheduling
from tests.advisor.podspec.test_fuzz import json_values, quantities
from tests.fastloop import examples

# A slot holds garbage, or something close to what the API serves.
effects = st.one_of(st.sampled_from([*EFFECTS, "", "Sometimes"]), json_values)
operators = st.one_of(st.sampled_from([*OPERATORS, "Equal", "Near", ""]), json_values)
strings = st.one_of(st.sampled_from(["", "a", "z1", "metadata.name", "0204", "x y"]), json_values)
resource_lists = st.one_of(
    st.dictionaries(st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu"]), quantities),
    json_values,
)
containers = st.lists(
    st.fixed_dictionaries(
        {"name": strings},
        optional={
            "resources": st.one_of(
                st.fixed_dictionaries(
                    {}, optional={"requests": resource_lists, "limits": resource_lists}
                ),
                json_values,
            ),
            "restartPolicy": st.one_of(st.just("Always"), json_values),
        },
    ),
    max_size=3,
)
requirements = st.lists(
    st.fixed_dictionaries(
        {"key": strings, "operator": operators},
        optional={"values": st.one_of(st.lists(strings, max_size=3), json_values)},
    ),
    max_size=3,
)
terms = st.lists(
    st.fixed_dictionaries(
        {}, optional={"matchExpressions": requirements, "matchFields": requirements}
    ),
    max_size=3,
)
pod_specs = st.fixed_dictionaries(
    {},
    optional={
        "containers": st.one_of(containers, json_values),
        "initContainers": st.one_of(containers, json_values),
        "overhead": resource_lists,
        "resources": st.one_of(st.fixed_dictionaries({"requests": resource_lists}), json_values),
        "nodeSelector": st.one_of(st.dictionaries(st.text(max_size=5), strings), json_values),
        "affinity": st.one_of(
            st.builds(
                lambda t: {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": t}
                    }
                },
                st.one_of(terms, json_values),
            ),
            json_values,
        ),
        "tolerations": st.one_of(
            st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "key": strings,
                        "operator": operators,
                        "value": strings,
                        "effect": effects,
                    },
                ),
                max_size=3,
            ),
            json_values,
        ),
    },
)
node_objects = st.fixed_dictionaries(
    {
        "metadata": st.one_of(
            st.fixed_dictionaries({"name": st.just("n1")}, optional={"labels": json_values}),
            json_values,
        ),
        "spec": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "unschedulable": st.one_of(st.booleans(), json_values),
                    "taints": st.one_of(
                        st.lists(
                            st.fixed_dictionaries(
                                {}, optional={"key": strings, "value": strings, "effect": effects}
                            ),
                            max_size=3,
                        ),
                        json_values,
                    ),
                },
            ),
            json_values,
        ),
        "status": st.one_of(st.fixed_dictionaries({"allocatable": resource_lists}), json_values),
    }
)


@settings(max_examples=examples(400), deadline=None)
@given(spec=st.one_of(pod_specs, json_values))
def test_pod_scheduling_never_raises(spec: Any) -> None:
    read = read_pod_scheduling({"metadata": {"name": "p"}, "spec": spec})
    assert read.resources.cpu_milli >= 0
    assert read.resources.memory_bytes >= 0
    c = read.constraints
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in c.node_selector)
    for term in c.required or ():
        assert all(r.operator in OPERATORS for r in term.expressions)
        assert all(r.key == "metadata.name" and len(r.values) == 1 for r in term.fields)
    for toleration in c.tolerations:
        assert toleration.operator in ("Equal", "Exists")
        assert toleration.effect in ("", *EFFECTS)
    assert all(isinstance(p, str) and p for p in read.problems)


@settings(max_examples=examples(300), deadline=None)
@given(obj=st.one_of(node_objects, json_values))
def test_node_scheduling_never_raises(obj: Any) -> None:
    read = read_node_scheduling(obj)
    a = read.allocatable
    assert all(v is None or v >= 0 for v in (a.cpu_milli, a.memory_bytes, a.pods))
    assert all(t.effect in EFFECTS and t.key for t in read.taints)
    assert isinstance(read.unschedulable, bool)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in read.labels.items())
