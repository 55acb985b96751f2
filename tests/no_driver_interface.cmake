cmake_minimum_required(VERSION 3.21) # CMP0054 NEW: the quoted "WITHOUT" below is a string, not a variable
# Whether a program holds the UVM tools device's name: not one built with
# UNIMEM_NO_PRIVATE_DRIVER_INTERFACE (WITHOUT), and one built without it (WITH) does, so that the
# check can fail. Usage: cmake -DWITHOUT=<program> -DWITH=<program> -P no_driver_interface.cmake
foreach(_which WITHOUT WITH)
  file(STRINGS "${${_which}}" _hits REGEX "nvidia-uvm-tools")
  if(_which STREQUAL "WITHOUT" AND _hits)
    message(FATAL_ERROR "${WITHOUT} was built without the driver interface, yet holds: ${_hits}")
  elseif(_which STREQUAL "WITH" AND NOT _hits)
    message(FATAL_ERROR "${WITH} holds no /dev/nvidia-uvm-tools: the check cannot tell")
  endif()
endforeach()
message("driver interface: absent from the program built without it")
