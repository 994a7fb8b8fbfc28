// fixed_param_source: streams a parameter tensor from a ROM, forever, on a
// valid/ready interface (the BRAM sources of MASE's emit_bram pass).
//
// The ROM has DEPTH = ceil(T0/P0) * ceil(T1/P1) words of P0*P1 elements of
// PRECISION_0 bits, loaded with $readmemh from INIT_FILE (relative names
// resolve against the simulator's or Yosys's directory). A file line is one
// word written as in MASE's *_rom.dat: element 0 of the beat leftmost (most
// significant), each element as PRECISION_0/4 hex digits (two's complement).
// Element e of a word comes out on lane data_out[e] (MASE's own source puts
// element 0 on the highest lane). After the last word the address wraps.
// The read is synchronous with an enable (a BRAM-style read port) into the
// output register, so data_out/data_out_valid are registered.
`timescale 1ns / 1ps
module fixed_param_source #(
    parameter int    PRECISION_0       = 8,
    parameter int    TENSOR_SIZE_DIM_0 = 4,
    parameter int    TENSOR_SIZE_DIM_1 = 8,
    parameter int    PARALLELISM_DIM_0 = 4,
    parameter int    PARALLELISM_DIM_1 = 4,
    parameter string INIT_FILE         = ""
) (
    input  logic                   clk,
    input  logic                   rst,
    output logic [PRECISION_0-1:0] data_out      [PARALLELISM_DIM_0*PARALLELISM_DIM_1-1:0],
    output logic                   data_out_valid,
    input  logic                   data_out_ready
);
  localparam int LANES = PARALLELISM_DIM_0 * PARALLELISM_DIM_1;
  localparam int DEPTH = ((TENSOR_SIZE_DIM_0 + PARALLELISM_DIM_0 - 1) / PARALLELISM_DIM_0)
      * ((TENSOR_SIZE_DIM_1 + PARALLELISM_DIM_1 - 1) / PARALLELISM_DIM_1);
  localparam int AW = (DEPTH > 1) ? $clog2(DEPTH) : 1;
  localparam int WORD_W = LANES * PRECISION_0;

  // Written only by $readmemh, which lint does not count as a driver
  // (and not at all without INIT_FILE).
  /* verilator lint_off UNDRIVEN */
  logic [WORD_W-1:0] rom[DEPTH];
  /* verilator lint_on UNDRIVEN */
  logic [WORD_W-1:0] word;
  logic [    AW-1:0] addr;

  // No file: the ROM is left uninitialised (an instance always names one;
  // a default file would be opened even for the unused default module).
  generate
    if (INIT_FILE != "") begin : g_init
      initial $readmemh(INIT_FILE, rom);
    end
  endgenerate

  always_ff @(posedge clk) begin
    if (rst) begin
      addr           <= '0;
      data_out_valid <= 1'b0;
    end else if (!data_out_valid || data_out_ready) begin
      data_out_valid <= 1'b1;
      addr           <= (addr == AW'(DEPTH - 1)) ? '0 : addr + 1'b1;
    end
  end

  // Data path without reset, so that the ROM maps onto a block RAM read port.
  always_ff @(posedge clk) begin
    if (rst || !data_out_valid || data_out_ready) word <= rom[addr];
  end

  for (genvar e = 0; e < LANES; e++) begin : g_lane
    assign data_out[e] = word[(LANES-1-e)*PRECISION_0+:PRECISION_0];
  end
endmodule
