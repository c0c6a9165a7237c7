"""One table of smartctl -d types (collectors/smartctl/passthrough.py): the poller's label, the
normaliser's block device and the probe helper's allow-list agree for every type smartctl(8)
documents. Before, three lists disagreed: with -d jmb39x,N every disk behind the bridge was
labelled sda and given /dev/sda's diskstats and write cache, and the helper refused jmb39x,
sssraid and intelliprop outright."""

from __future__ import annotations

import pytest

from collectors.smartctl import normalise_smartctl, passthrough
from collectors.smartctl.source import SmartTarget, checked_type
from collectors.source import Refused

# smartctl 7.3's -h, "-d TYPE": one example of each form, and sssraid (7.4).
PASS_THROUGH = ["megaraid,0", "sat+megaraid,60", "aacraid,0,0,4", "cciss,3", "3ware,2", "areca,3", "areca,3/1",
                "hpt,1/2", "hpt,1/2/3", "jmb39x,2", "jmb39x,1,s33,force", "jmb39x-q,0+sat", "jmb39x-q2,3",
                "jms56x,1", "sssraid,1,5", "intelliprop,1", "intelliprop,0+ata"]
PLAIN = ["ata", "scsi", "nvme", "nvme,0x1", "sat", "sat,12", "sat,auto,16", "usbcypress", "usbcypress,0x24",
         "usbjmicron", "usbjmicron,p,x,1", "usbprolific", "usbsunplus", "sntasmedia", "sntjmicron",
         "sntjmicron,0x1", "sntrealtek", "marvell", "auto"]
MALFORMED = ["megaraid", "megaraid,0 -x", "sat,12,foo", "jmb39x", "cciss,", "areca,1/2/3", "megaraid,1234",
             "sat+jmb39x", "hpt,1,2", "nvme;id", "x" * 41]


def _reading(dev_type: str):
    doc = {"device": {"name": "/dev/sda", "type": dev_type, "protocol": "ATA"}, "model_name": "M",
           "serial_number": "S1", "smart_status": {"passed": True}}
    return normalise_smartctl(doc)


@pytest.mark.parametrize("dev_type", PASS_THROUGH)
def test_a_disk_behind_a_controller_is_not_the_node_it_is_read_through(dev_type):
    assert passthrough.is_valid(dev_type)
    assert checked_type(dev_type) == dev_type  # the probe helper runs it
    assert _reading(dev_type).block_device is None  # not /dev/sda's diskstats or write cache
    assert SmartTarget("/dev/sda", dev_type).label == f"sda:{dev_type}"  # one label per disk


@pytest.mark.parametrize("dev_type", PLAIN)
def test_a_plain_type_is_the_node_itself(dev_type):
    assert passthrough.is_valid(dev_type) and not passthrough.is_pass_through(dev_type)
    assert checked_type(dev_type) == dev_type
    assert _reading(dev_type).block_device == "sda"
    assert SmartTarget("/dev/sda", dev_type).label == "sda"


@pytest.mark.parametrize("dev_type", MALFORMED)
def test_a_malformed_type_is_refused(dev_type):
    assert not passthrough.is_valid(dev_type)
    with pytest.raises(Refused):
        checked_type(dev_type)


def test_a_bare_controller_name_from_smartctl_json_still_means_a_controller():
    # smartctl's JSON names cciss and 3ware disks without the number ("cciss"): the normaliser
    # restores it from the info name, and never takes the node for the disk.
    assert passthrough.is_pass_through("cciss") and _reading("cciss").block_device is None
