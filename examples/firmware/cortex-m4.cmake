# CMake toolchain file: arm-none-eabi-gcc for a Cortex-M4 with its FPU (hard-float ABI). The
# project's flags (CMAKE_C_FLAGS) are the ones an mcugen bundle compiles with when it is used with
# add_subdirectory; generate the bundle for the same core (mcugen ... --board=cortex-m4).
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_C_FLAGS_INIT "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16")
# no board support here: newlib's stubs (nosys) stand in for a board's startup code and I/O
set(CMAKE_EXE_LINKER_FLAGS_INIT "--specs=nosys.specs -Wl,--gc-sections")
set(CMAKE_EXECUTABLE_SUFFIX_C ".elf")
