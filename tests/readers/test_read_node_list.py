"""``read_node_list``: each node's group at every level, from a machine's node list."""

from __future__ import annotations

import numpy as np
import pytest

from mtgym.core.errors import DataError
from mtgym.readers import read_node_list, read_summit_nodes

RAGGED = """\
host,rack,group,note
n0,r1,gA,x
n1,r1,gA,x
n2,r1,gA,x
n3,r0,gA,x
n4,r0,gA,x
n5,r9,gB,x
"""


def test_read_node_list__ids_in_order_of_first_appearance_extra_columns_ignored(write):
    nl = read_node_list(write("nodes.csv", RAGGED), ["rack", "group"])
    assert nl.levels == ("rack", "group") and nl.num_nodes == 6
    np.testing.assert_array_equal(nl.group_ids[:, 0], [0, 0, 0, 1, 1, 2])  # r1, r0, r9
    np.testing.assert_array_equal(nl.group_ids[:, 1], [0, 0, 0, 0, 0, 1])
    assert nl.labels[5].tolist() == ["r9", "gB"]
    assert not nl.group_ids.flags.writeable and not nl.labels.flags.writeable


def test_read_node_list__a_rack_split_across_groups_names_it_and_the_row(write):
    bad = RAGGED.replace("n4,r0,gA", "n4,r0,gB")
    with pytest.raises(DataError) as err:
        read_node_list(write("nodes.csv", bad), ["rack", "group"])
    msg = str(err.value)
    assert "row 5" in msg and "'rack'" in msg and "'r0'" in msg
    assert "each rack inside one group" in msg and "groups 'gA', 'gB'" in msg
    assert "\n" not in msg


def test_read_node_list__missing_column_and_empty_label(write):
    with pytest.raises(DataError, match=r"field 'cabinet' has value 'missing"):
        read_node_list(write("nodes.csv", RAGGED), ["cabinet"])
    with pytest.raises(DataError, match=r"row 3: field 'rack' has value ''; allowed: non-empty"):
        read_node_list(write("nodes.csv", RAGGED.replace("n1,r1", "n1,")), ["rack"])


def test_read_node_list__summit_nodes_csv_is_a_node_list_as_it_is(shared_data):
    path = shared_data / "summit-nodes.csv"
    nl = read_node_list(path, ["cabinet", "row"])
    ref = read_summit_nodes(path)
    assert nl.num_nodes == 4734
    np.testing.assert_array_equal(ref.node_index, np.arange(4734))  # rows are in node order
    for k, ids in enumerate((ref.cabinet_id, ref.row_id)):
        # the same partition of the nodes (the ids may be numbered differently)
        pairs = np.unique(np.stack([nl.group_ids[:, k], ids], axis=1), axis=0)
        assert len(pairs) == len(np.unique(ids)) == len(np.unique(nl.group_ids[:, k]))
    np.testing.assert_array_equal(np.bincount(np.bincount(nl.group_ids[:, 0])), [0] * 18 + [263])
