#!/bin/sh
# ssdfleet %pre: 1 (install) | 2 (upgrade)
# @COMMON@
ssdfleet_create_user
